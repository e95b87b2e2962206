//! Per-plugin, per-run caps on what a plugin makes the host show and record.
//!
//! Each plugin instance has one [`Budget`]: a counter per [`Kind`] (UI
//! intents it sends, log lines it writes, journal entries its host effects
//! cause) against its [`RateLimits`]. Admitting or refusing an item is one
//! atomic add and a comparison: nothing is allocated, recorded or rendered
//! for an item over the cap, so a plugin flooding the host costs the run a
//! counter increment per item. The dispatcher resets the budgets when a run
//! starts (`agent_start`) and the hooks when it ends (`agent_end`: what
//! plugins do between runs has caps of its own), reports each kind once per run when its cap is
//! first exceeded ([`Budget::newly_exceeded`], a `plugin.rate-limited`
//! diagnostic), and takes the drop counts at the end of the run
//! ([`Budget::take_drops`]) for the session to record.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What a cap limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// UI intents (`notify`, `set-status`, questions...) a plugin sends.
    Ui,
    /// Lines a plugin writes with `host.log`.
    Log,
    /// Session journal entries a plugin's host effects cause (each effect
    /// is two: its intent and its completion).
    Journal,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 3] = [Kind::Ui, Kind::Log, Kind::Journal];

    /// The kind's name in diagnostics and session records.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Ui => "ui-intents",
            Kind::Log => "log-lines",
            Kind::Journal => "journal-entries",
        }
    }

    /// What one item of the kind is called, in prose.
    pub fn items(self) -> &'static str {
        match self {
            Kind::Ui => "UI intents",
            Kind::Log => "log lines",
            Kind::Journal => "session journal entries",
        }
    }

    /// The configuration option that sets the kind's cap.
    pub fn option(self) -> &'static str {
        match self {
            Kind::Ui => "plugins.max-ui-intents",
            Kind::Log => "plugins.max-log-lines",
            Kind::Journal => "plugins.max-journal-entries",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The caps of one plugin per run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimits {
    /// Most UI intents kept per run.
    pub ui_intents: u64,
    /// Most log lines kept per run.
    pub log_lines: u64,
    /// Most session journal entries recorded per run.
    pub journal_entries: u64,
}

impl RateLimits {
    /// The default caps: 500 UI intents, 1000 log lines (as many as the
    /// host buffers between two drains, [`crate::runtime::LOG_LINES`]) and
    /// 10,000 journal entries (5000 effects) per plugin per run.
    pub const DEFAULT: RateLimits = RateLimits {
        ui_intents: 500,
        log_lines: 1000,
        journal_entries: 10_000,
    };

    /// The cap of `kind`.
    pub fn get(&self, kind: Kind) -> u64 {
        match kind {
            Kind::Ui => self.ui_intents,
            Kind::Log => self.log_lines,
            Kind::Journal => self.journal_entries,
        }
    }
}

impl Default for RateLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// One plugin's counters for the current run.
#[derive(Debug, Default)]
pub struct Budget {
    limits: RateLimits,
    /// Items offered this run, kept or not.
    offered: [AtomicU64; 3],
    /// Items dropped since the drop counts were last taken.
    dropped: [AtomicU64; 3],
    /// Whether the cap's excess was reported this run.
    reported: [AtomicBool; 3],
}

/// What one kind dropped, for the session's record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dropped {
    /// The kind.
    pub kind: Kind,
    /// Its cap.
    pub limit: u64,
    /// How many items over the cap were dropped.
    pub dropped: u64,
}

impl Budget {
    /// A budget with `limits` and nothing counted.
    pub fn new(limits: RateLimits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    /// The caps.
    pub fn limits(&self) -> RateLimits {
        self.limits
    }

    /// Counts `n` items of `kind`: whether they fit under the cap (all or
    /// none). Items that do not fit are counted as dropped.
    pub fn admit(&self, kind: Kind, n: u64) -> bool {
        let i = kind.index();
        let before = self.offered[i].fetch_add(n, Ordering::Relaxed);
        if before
            .checked_add(n)
            .is_some_and(|total| total <= self.limits.get(kind))
        {
            return true;
        }
        self.dropped[i].fetch_add(n, Ordering::Relaxed);
        false
    }

    /// How many more items of `kind` fit under the cap this run.
    pub fn room(&self, kind: Kind) -> u64 {
        self.limits
            .get(kind)
            .saturating_sub(self.offered[kind.index()].load(Ordering::Relaxed))
    }

    /// Counts `n` items of `kind` that were dropped for another reason (a
    /// full buffer) as dropped.
    pub fn count_dropped(&self, kind: Kind, n: u64) {
        if n > 0 {
            self.dropped[kind.index()].fetch_add(n, Ordering::Relaxed);
        }
    }

    /// The kinds that dropped something this run and were not reported yet:
    /// each is returned once per run.
    pub fn newly_exceeded(&self) -> impl Iterator<Item = Kind> + '_ {
        Kind::ALL.into_iter().filter(|kind| {
            let i = kind.index();
            self.dropped[i].load(Ordering::Relaxed) > 0
                && !self.reported[i].swap(true, Ordering::Relaxed)
        })
    }

    /// Takes the drop counts since they were last taken (the kinds that
    /// dropped nothing are left out).
    pub fn take_drops(&self) -> Vec<Dropped> {
        Kind::ALL
            .into_iter()
            .filter_map(|kind| {
                let dropped = self.dropped[kind.index()].swap(0, Ordering::Relaxed);
                (dropped > 0).then_some(Dropped {
                    kind,
                    limit: self.limits.get(kind),
                    dropped,
                })
            })
            .collect()
    }

    /// Whether anything was dropped since the drop counts were last taken.
    pub fn has_drops(&self) -> bool {
        self.dropped
            .iter()
            .any(|dropped| dropped.load(Ordering::Relaxed) > 0)
    }

    /// A new run starts: nothing is counted or reported (take the drop
    /// counts first).
    pub fn reset(&self) {
        for i in 0..Kind::ALL.len() {
            self.offered[i].store(0, Ordering::Relaxed);
            self.dropped[i].store(0, Ordering::Relaxed);
            self.reported[i].store(false, Ordering::Relaxed);
        }
    }
}

/// The `plugin.rate-limited` warning for `plugin`, whose `kind` went over
/// its cap `limit` this run.
pub fn diagnostic(plugin: &str, kind: Kind, limit: u64) -> smith_diag::Diagnostic {
    smith_diag::Diagnostic::warning(
        "plugin.rate-limited",
        format!(
            "plugin {plugin} sent more than {limit} {} in one run; the rest it sends in this run are dropped",
            kind.items()
        ),
        format!(
            "a plugin may send at most {limit} {} per run (`{}`), so that one flooding the host cannot slow the run or fill the session; dropped ones are neither shown nor recorded, and the session records how many were dropped at the end of the run",
            kind.items(),
            kind.option()
        ),
        format!(
            "if the plugin needs more, raise the cap (`smith config set {} N`); otherwise report it to its author, or turn it off with `smith plugin disable {plugin}`",
            kind.option()
        ),
    )
    .with_value(limit)
    .with_field(kind.option())
    .with_surface(smith_diag::Surface::plugin(plugin))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Budget {
        Budget::new(RateLimits {
            ui_intents: 3,
            log_lines: 2,
            journal_entries: 5,
        })
    }

    #[test]
    fn items_up_to_the_cap_are_admitted_and_the_rest_counted_as_dropped() {
        let budget = small();
        let admitted = (0..10).filter(|_| budget.admit(Kind::Ui, 1)).count();
        assert_eq!(admitted, 3);
        assert!(budget.admit(Kind::Log, 1));
        assert_eq!(
            budget.take_drops(),
            [Dropped {
                kind: Kind::Ui,
                limit: 3,
                dropped: 7
            }]
        );
        // Taken: nothing is reported twice, but the run's cap still holds.
        assert!(budget.take_drops().is_empty());
        assert!(!budget.admit(Kind::Ui, 1));
        assert_eq!(budget.take_drops()[0].dropped, 1);
    }

    #[test]
    fn several_items_fit_whole_or_not_at_all() {
        let budget = small();
        assert!(budget.admit(Kind::Journal, 2));
        assert!(budget.admit(Kind::Journal, 2));
        // 4 of 5 used: a pair no longer fits, and is dropped whole.
        assert!(!budget.admit(Kind::Journal, 2));
        assert_eq!(budget.take_drops()[0].dropped, 2);
    }

    #[test]
    fn each_kind_is_reported_once_per_run() {
        let budget = small();
        assert_eq!(budget.newly_exceeded().count(), 0);
        for _ in 0..5 {
            budget.admit(Kind::Log, 1);
        }
        assert_eq!(budget.newly_exceeded().collect::<Vec<_>>(), [Kind::Log]);
        budget.admit(Kind::Log, 1);
        assert_eq!(budget.newly_exceeded().count(), 0);
        budget.count_dropped(Kind::Ui, 4);
        assert_eq!(budget.newly_exceeded().collect::<Vec<_>>(), [Kind::Ui]);
        assert!(budget.has_drops());
        // A new run: counted afresh, reported again.
        budget.take_drops();
        budget.reset();
        assert!(!budget.has_drops());
        assert!(budget.admit(Kind::Log, 1));
        assert!(budget.admit(Kind::Log, 1));
        assert!(!budget.admit(Kind::Log, 1));
        assert_eq!(budget.newly_exceeded().collect::<Vec<_>>(), [Kind::Log]);
    }

    #[test]
    fn a_zero_cap_keeps_nothing() {
        let budget = Budget::new(RateLimits {
            ui_intents: 0,
            log_lines: 1,
            journal_entries: 1,
        });
        assert!(!budget.admit(Kind::Ui, 1));
        assert!(!budget.admit(Kind::Journal, 2));
        assert!(budget.admit(Kind::Log, 1));
    }

    #[test]
    fn the_diagnostic_names_the_plugin_the_kind_the_limit_and_the_way_out() {
        let d = diagnostic("test/flood", Kind::Ui, 500);
        assert_eq!(d.code(), "plugin.rate-limited");
        let text = d.render_plain();
        for needle in [
            "test/flood",
            "500 UI intents",
            "plugins.max-ui-intents",
            "smith plugin disable test/flood",
        ] {
            assert!(text.contains(needle), "{needle}: {text}");
        }
    }
}
