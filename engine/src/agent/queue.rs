//! Queued input and the policies that decide when it is delivered.
//!
//! Input that arrives while the agent works waits in the [`Queue`] under a
//! mode name. Each mode has a [`QueuePolicy`]: whether an item of that mode
//! stops new tool calls from starting, and how many items it delivers at
//! each [`DeliveryPoint`]. The two defaults are [`Steer`] and [`FollowUp`]
//! (used by runtimes without plugins); plugins contribute policies as data,
//! which the host turns into [`DeclaredPolicy`] values. Queued input becomes
//! a conversation message only when it is delivered.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::protocol::QueuedItem;

/// Where the loop offers queued input for delivery.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeliveryPoint {
    /// After a response and its complete tool-result batch, when the agent
    /// is going to make another request anyway.
    AfterToolBatch,
    /// When the agent would otherwise stop (no tool calls, or idle).
    BeforeStop,
}

/// A queue delivery policy.
pub trait QueuePolicy: Send + Sync {
    /// The mode name items are queued under (`steer`).
    fn mode(&self) -> &str;

    /// Whether a queued item of this mode stops new tool calls from
    /// starting (calls not started get `skipped` results).
    fn interrupts_tools(&self) -> bool;

    /// How many of the `queued` items of this mode (oldest first) to
    /// deliver at `point`.
    fn deliver(&self, point: DeliveryPoint, queued: usize) -> usize;
}

/// Steering: interrupts tool work and is delivered, all items at once, at
/// the first delivery point.
#[derive(Clone, Copy, Debug, Default)]
pub struct Steer;

impl QueuePolicy for Steer {
    fn mode(&self) -> &str {
        "steer"
    }
    fn interrupts_tools(&self) -> bool {
        true
    }
    fn deliver(&self, _point: DeliveryPoint, queued: usize) -> usize {
        queued
    }
}

/// Follow-up: waits until the agent would stop, then delivers one item,
/// which starts the next round.
#[derive(Clone, Copy, Debug, Default)]
pub struct FollowUp;

impl QueuePolicy for FollowUp {
    fn mode(&self) -> &str {
        "follow_up"
    }
    fn interrupts_tools(&self) -> bool {
        false
    }
    fn deliver(&self, point: DeliveryPoint, queued: usize) -> usize {
        match point {
            DeliveryPoint::AfterToolBatch => 0,
            DeliveryPoint::BeforeStop => queued.min(1),
        }
    }
}

/// How many queued items a [`DeclaredPolicy`] delivers at one delivery
/// point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Delivery {
    /// None: the items keep waiting.
    None,
    /// The oldest one.
    One,
    /// All of them at once.
    All,
}

impl Delivery {
    /// How many of `queued` items this delivers.
    pub fn count(self, queued: usize) -> usize {
        match self {
            Delivery::None => 0,
            Delivery::One => queued.min(1),
            Delivery::All => queued,
        }
    }
}

/// A queue policy declared as data (what a plugin contributes): its mode,
/// whether it interrupts tool work, and what it delivers at each point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclaredPolicy {
    /// The mode name items are queued under.
    pub mode: String,
    /// One line for help and completion.
    pub description: String,
    /// Whether a queued item of this mode stops new tool calls from
    /// starting.
    pub interrupts_tools: bool,
    /// What is delivered at [`DeliveryPoint::AfterToolBatch`].
    pub after_tool_batch: Delivery,
    /// What is delivered at [`DeliveryPoint::BeforeStop`].
    pub before_stop: Delivery,
}

impl QueuePolicy for DeclaredPolicy {
    fn mode(&self) -> &str {
        &self.mode
    }
    fn interrupts_tools(&self) -> bool {
        self.interrupts_tools
    }
    fn deliver(&self, point: DeliveryPoint, queued: usize) -> usize {
        match point {
            DeliveryPoint::AfterToolBatch => self.after_tool_batch.count(queued),
            DeliveryPoint::BeforeStop => self.before_stop.count(queued),
        }
    }
}

/// The input queue with its policies.
pub struct Queue {
    items: VecDeque<QueuedItem>,
    next_id: u64,
    policies: Vec<Arc<dyn QueuePolicy>>,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue").field("items", &self.items).finish()
    }
}

impl Default for Queue {
    fn default() -> Self {
        Self::new(default_policies())
    }
}

/// The default policies: [`Steer`] then [`FollowUp`].
pub fn default_policies() -> Vec<Arc<dyn QueuePolicy>> {
    vec![Arc::new(Steer), Arc::new(FollowUp)]
}

impl Queue {
    /// An empty queue; `policies` are consulted in order at each delivery
    /// point (earlier policies' items are delivered first). A later policy
    /// with the same mode name replaces an earlier one.
    pub fn new(policies: Vec<Arc<dyn QueuePolicy>>) -> Self {
        let mut unique: Vec<Arc<dyn QueuePolicy>> = Vec::with_capacity(policies.len());
        for policy in policies {
            match unique.iter_mut().find(|p| p.mode() == policy.mode()) {
                Some(slot) => *slot = policy,
                None => unique.push(policy),
            }
        }
        Self {
            items: VecDeque::new(),
            next_id: 1,
            policies: unique,
        }
    }

    /// Queues `text` under `mode`.
    ///
    /// # Errors
    ///
    /// When no policy has that mode; the message lists the known modes.
    pub fn push(&mut self, mode: &str, text: String) -> Result<u64, String> {
        if !self.policies.iter().any(|p| p.mode() == mode) {
            let known: Vec<&str> = self.policies.iter().map(|p| p.mode()).collect();
            return Err(format!(
                "no queue policy is registered for mode {mode:?}; use one of: {}",
                known.join(", ")
            ));
        }
        let id = self.next_id;
        self.next_id += 1;
        self.items.push_back(QueuedItem {
            id,
            mode: mode.to_owned(),
            text,
        });
        Ok(id)
    }

    /// Removes the item `id`; `false` when there is none.
    pub fn remove(&mut self, id: u64) -> bool {
        let before = self.items.len();
        self.items.retain(|item| item.id != id);
        before != self.items.len()
    }

    /// Removes every item.
    pub fn clear(&mut self) {
        self.items.clear();
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The items in queue order.
    pub fn snapshot(&self) -> Vec<QueuedItem> {
        self.items.iter().cloned().collect()
    }

    /// Whether a queued item's policy forbids starting new tool calls.
    pub fn interrupts_tools(&self) -> bool {
        self.items.iter().any(|item| {
            self.policies
                .iter()
                .any(|p| p.mode() == item.mode && p.interrupts_tools())
        })
    }

    /// Removes and returns what the policies deliver at `point`, policy by
    /// policy, oldest first within each.
    pub fn take(&mut self, point: DeliveryPoint) -> Vec<QueuedItem> {
        let mut out = Vec::new();
        for policy in &self.policies {
            let queued = self
                .items
                .iter()
                .filter(|i| i.mode == policy.mode())
                .count();
            let mut n = policy.deliver(point, queued).min(queued);
            if n == 0 {
                continue;
            }
            let mut kept = VecDeque::with_capacity(self.items.len());
            for item in self.items.drain(..) {
                if n > 0 && item.mode == policy.mode() {
                    n -= 1;
                    out.push(item);
                } else {
                    kept.push_back(item);
                }
            }
            self.items = kept;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steer_interrupts_and_delivers_everything_follow_up_waits() {
        let mut q = Queue::default();
        q.push("follow_up", "f1".into()).unwrap();
        q.push("follow_up", "f2".into()).unwrap();
        assert!(!q.interrupts_tools());
        q.push("steer", "s1".into()).unwrap();
        q.push("steer", "s2".into()).unwrap();
        assert!(q.interrupts_tools());
        let got: Vec<String> = q
            .take(DeliveryPoint::AfterToolBatch)
            .into_iter()
            .map(|i| i.text)
            .collect();
        assert_eq!(got, vec!["s1", "s2"]);
        assert!(!q.interrupts_tools());
        assert!(q.take(DeliveryPoint::AfterToolBatch).is_empty());
        let got: Vec<String> = q
            .take(DeliveryPoint::BeforeStop)
            .into_iter()
            .map(|i| i.text)
            .collect();
        assert_eq!(got, vec!["f1"]);
        assert_eq!(q.snapshot().len(), 1);
    }

    #[test]
    fn unknown_modes_and_removal() {
        let mut q = Queue::default();
        let err = q.push("later", "x".into()).unwrap_err();
        assert!(err.contains("\"later\"") && err.contains("steer, follow_up"));
        let id = q.push("steer", "x".into()).unwrap();
        assert!(q.remove(id));
        assert!(!q.remove(id));
        assert!(q.is_empty());
    }

    #[test]
    fn a_custom_policy_plugs_in() {
        struct Batch;
        impl QueuePolicy for Batch {
            fn mode(&self) -> &str {
                "batch"
            }
            fn interrupts_tools(&self) -> bool {
                false
            }
            fn deliver(&self, point: DeliveryPoint, queued: usize) -> usize {
                if point == DeliveryPoint::BeforeStop {
                    queued
                } else {
                    0
                }
            }
        }
        let mut policies = default_policies();
        policies.push(Arc::new(Batch));
        let mut q = Queue::new(policies);
        q.push("batch", "a".into()).unwrap();
        q.push("batch", "b".into()).unwrap();
        assert_eq!(q.take(DeliveryPoint::BeforeStop).len(), 2);
    }

    /// The declarations smith/product contributes for its two modes.
    fn declared_steer() -> DeclaredPolicy {
        DeclaredPolicy {
            mode: "steer".into(),
            description: "interrupts tool work".into(),
            interrupts_tools: true,
            after_tool_batch: Delivery::All,
            before_stop: Delivery::All,
        }
    }

    fn declared_follow_up() -> DeclaredPolicy {
        DeclaredPolicy {
            mode: "follow_up".into(),
            description: "waits until the agent would stop".into(),
            interrupts_tools: false,
            after_tool_batch: Delivery::None,
            before_stop: Delivery::One,
        }
    }

    #[test]
    fn declared_policies_behave_exactly_like_steer_and_follow_up() {
        let pairs: [(&dyn QueuePolicy, DeclaredPolicy); 2] = [
            (&Steer, declared_steer()),
            (&FollowUp, declared_follow_up()),
        ];
        for (builtin, declared) in &pairs {
            assert_eq!(builtin.mode(), declared.mode());
            assert_eq!(builtin.interrupts_tools(), declared.interrupts_tools());
            for point in [DeliveryPoint::AfterToolBatch, DeliveryPoint::BeforeStop] {
                for queued in 0..5 {
                    assert_eq!(
                        builtin.deliver(point, queued),
                        declared.deliver(point, queued),
                        "{} at {point:?} with {queued} queued",
                        declared.mode
                    );
                }
            }
        }
    }

    #[test]
    fn a_queue_of_declared_policies_runs_like_the_default_queue() {
        let script: &[(&str, &str)] = &[
            ("follow_up", "f1"),
            ("steer", "s1"),
            ("follow_up", "f2"),
            ("steer", "s2"),
        ];
        let mut builtin = Queue::default();
        let mut declared = Queue::new(vec![
            Arc::new(declared_steer()),
            Arc::new(declared_follow_up()),
        ]);
        for (mode, text) in script {
            builtin.push(mode, (*text).into()).unwrap();
            declared.push(mode, (*text).into()).unwrap();
        }
        let points = [
            DeliveryPoint::AfterToolBatch,
            DeliveryPoint::BeforeStop,
            DeliveryPoint::AfterToolBatch,
            DeliveryPoint::BeforeStop,
            DeliveryPoint::BeforeStop,
        ];
        for point in points {
            assert_eq!(builtin.interrupts_tools(), declared.interrupts_tools());
            assert_eq!(builtin.take(point), declared.take(point), "{point:?}");
            assert_eq!(builtin.snapshot(), declared.snapshot());
        }
        assert!(declared.is_empty());
    }
}
