//! `smith stats`: what the stored sessions hold and what they cost — the
//! number of sessions and runs, and tokens and cost by provider and model.
//!
//! Every entry of every session counts once (branches share their
//! ancestors' entries, which are stored once). Tokens are summed from the
//! usage each assistant message recorded, under the model that was current
//! when it was recorded (the session's latest model change); cost from each
//! run's end. A count the provider never stated is unknown, and stays so:
//! the sums say how many messages (or runs) they could not count, never
//! treating the missing as 0.

use std::collections::BTreeMap;
use std::io::Write as _;

use anyhow::Context as _;
use serde_json::{Value, json};
use smith_store::{EntryKind, Store};

/// Show how many sessions and runs are stored, and tokens and cost by provider and model.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// A sum of values some of which were never stated.
#[derive(Default, Clone, Copy)]
struct Sum<T> {
    known: T,
    unknown: u64,
}

impl Sum<u64> {
    fn add(&mut self, v: &Value) {
        match v.as_u64() {
            Some(n) => self.known += n,
            None => self.unknown += 1,
        }
    }

    fn show(self) -> String {
        let n = thousands(self.known);
        match (self.unknown, self.known) {
            (0, _) => n,
            (_, 0) => "unknown".to_owned(),
            _ => format!("{n}+?"),
        }
    }

    fn json(self) -> Value {
        json!({"known": self.known, "unknown": self.unknown})
    }
}

impl Sum<f64> {
    fn add(&mut self, v: &Value) {
        match v.as_f64() {
            Some(c) => self.known += c,
            None => self.unknown += 1,
        }
    }

    fn show(self) -> String {
        if self.unknown > 0 && self.known == 0.0 {
            "unknown".to_owned()
        } else if self.unknown > 0 {
            format!("${:.4}+?", self.known)
        } else {
            format!("${:.4}", self.known)
        }
    }

    fn json(self) -> Value {
        json!({"known": self.known, "unknown": self.unknown})
    }
}

/// What one provider and model accounts for.
#[derive(Default, Clone, Copy)]
struct Usage {
    runs: u64,
    messages: u64,
    input: Sum<u64>,
    output: Sum<u64>,
    cache_read: Sum<u64>,
    cache_write: Sum<u64>,
    cost: Sum<f64>,
}

impl Usage {
    fn merge(&mut self, o: &Usage) {
        self.runs += o.runs;
        self.messages += o.messages;
        for (a, b) in [
            (&mut self.input, o.input),
            (&mut self.output, o.output),
            (&mut self.cache_read, o.cache_read),
            (&mut self.cache_write, o.cache_write),
        ] {
            a.known += b.known;
            a.unknown += b.unknown;
        }
        self.cost.known += o.cost.known;
        self.cost.unknown += o.cost.unknown;
    }

    fn json(&self) -> Value {
        json!({
            "runs": self.runs,
            "messages": self.messages,
            "input": self.input.json(),
            "output": self.output.json(),
            "cache_read": self.cache_read.json(),
            "cache_write": self.cache_write.json(),
            "cost": self.cost.json(),
        })
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Runs `smith stats`; returns the exit code.
///
/// # Errors
///
/// When the session store cannot be opened or the output fails. A session
/// that cannot be read is skipped with a warning naming it and counted.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let root = crate::settings::session_root()?;
    let store = Store::open(&root)
        .with_context(|| format!("opening the session store at {}", root.display()))?;
    let list = store.list()?;
    let mut by_model: BTreeMap<String, Usage> = BTreeMap::new();
    let mut empty = 0u64;
    let mut unreadable = Vec::new();
    for info in &list {
        let id = info.id.to_hex();
        let session = match store.load(&id) {
            Ok(s) => s,
            Err(e) => {
                eprintln!(
                    "smith: warning: session {id} was not counted: {e}; run `smith session repair {id}` to keep its readable entries"
                );
                unreadable.push(id);
                continue;
            }
        };
        if session.records().is_empty() {
            empty += 1;
            continue;
        }
        let mut current = "unknown/unknown".to_owned();
        for record in session.records() {
            let kind = record.entry_kind();
            if !matches!(
                kind,
                EntryKind::ModelChange | EntryKind::AssistantMessage | EntryKind::Metadata
            ) {
                continue;
            }
            let v = match smith_engine::journal::store::entry_json(&session, record) {
                Ok(v) => v,
                Err(e) => {
                    eprintln!("smith: warning: an entry of session {id} was not counted: {e}");
                    continue;
                }
            };
            match kind {
                EntryKind::ModelChange => {
                    current = format!(
                        "{}/{}",
                        v["provider"].as_str().unwrap_or("unknown"),
                        v["model"].as_str().unwrap_or("unknown")
                    );
                }
                EntryKind::AssistantMessage => {
                    let u = by_model.entry(current.clone()).or_default();
                    u.messages += 1;
                    let usage = &v["usage"];
                    u.input.add(&usage["input"]);
                    u.output.add(&usage["output"]);
                    u.cache_read.add(&usage["cache_read"]);
                    u.cache_write.add(&usage["cache_write"]);
                }
                _ => match v["type"].as_str() {
                    Some("run_start") => by_model.entry(current.clone()).or_default().runs += 1,
                    Some("run_end") => by_model
                        .entry(current.clone())
                        .or_default()
                        .cost
                        .add(&v["cost"]),
                    _ => {}
                },
            }
        }
    }
    let mut total = Usage::default();
    for u in by_model.values() {
        total.merge(u);
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        let models: Vec<Value> = by_model
            .iter()
            .map(|(k, u)| {
                let (provider, model) = k.split_once('/').unwrap_or((k, ""));
                let mut v = u.json();
                v["provider"] = json!(provider);
                v["model"] = json!(model);
                v
            })
            .collect();
        let doc = json!({
            "sessions": list.len(),
            "empty_sessions": empty,
            "unreadable_sessions": unreadable,
            "models": models,
            "total": total.json(),
        });
        writeln!(out, "{doc}")?;
        return Ok(0);
    }
    writeln!(
        out,
        "{} session(s) in {} ({empty} empty{})",
        list.len(),
        store.root().display(),
        if unreadable.is_empty() {
            String::new()
        } else {
            format!(", {} not readable", unreadable.len())
        }
    )?;
    if by_model.is_empty() {
        return Ok(0);
    }
    writeln!(out)?;
    let rows: Vec<(String, Usage)> = by_model
        .into_iter()
        .chain(std::iter::once(("total".to_owned(), total)))
        .collect();
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(5).max(14);
    writeln!(
        out,
        "{:<width$}  {:>6}  {:>8}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}",
        "PROVIDER/MODEL",
        "RUNS",
        "MESSAGES",
        "INPUT",
        "OUTPUT",
        "CACHE READ",
        "CACHE WRITE",
        "COST"
    )?;
    for (k, u) in rows {
        writeln!(
            out,
            "{:<width$}  {:>6}  {:>8}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}",
            k,
            u.runs,
            u.messages,
            u.input.show(),
            u.output.show(),
            u.cache_read.show(),
            u.cache_write.show(),
            u.cost.show()
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "+? : some messages (or runs) did not state this count; the figure is what was stated, the rest is unknown"
    )?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_keep_the_unknown_apart() {
        let mut u = Sum::<u64>::default();
        u.add(&Value::Null);
        assert_eq!(u.show(), "unknown");
        u.add(&json!(7));
        assert_eq!(u.show(), "7+?");
        let mut s = Sum::<u64>::default();
        s.add(&json!(1200));
        assert_eq!(s.show(), "1,200");
        s.add(&Value::Null);
        assert_eq!(s.show(), "1,200+?");
        let mut c = Sum::<f64>::default();
        c.add(&Value::Null);
        assert_eq!(c.show(), "unknown");
        c.add(&json!(0.5));
        assert_eq!(c.show(), "$0.5000+?");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(12), "12");
    }
}
