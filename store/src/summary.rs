//! A session's summary sidecar, `<root>/<id>.summary`: what a listing shows
//! about a session (its project, first prompt, message count and cost)
//! without reading the session itself.
//!
//! The runtime that records the session rewrites it (a temporary file
//! renamed over it) when the first prompt arrives and at each run's start
//! and end. It is a cache of what the session's entries say: a missing or
//! unreadable one only makes a listing say "unknown", and resuming the
//! session writes it again from the entries.

use std::path::Path;

/// What a listing shows about a session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// The working folder of the session's first run (its project).
    pub cwd: Option<String>,
    /// The first user prompt, whole (a listing cuts it).
    pub first_prompt: Option<String>,
    /// User and assistant messages recorded.
    pub messages: u64,
    /// The summed cost of the runs in US dollars; `None` when a run's cost
    /// was unknown (or no run ended yet).
    pub cost: Option<f64>,
    /// How many runs ended.
    pub runs: u64,
    /// Every plugin and key (`(plugin, key)`) with a `plugin_state` entry
    /// anywhere in the session file, or more: the recorder adds a key
    /// before it writes the entry. A lookup of a plugin's session state
    /// that this list rules out needs no read of the session. `None` when
    /// not known (a sidecar written by an earlier build): a lookup then
    /// reads the session.
    pub state_keys: Option<Vec<(String, String)>>,
}

/// The longest first prompt kept in a summary, in bytes (cut at a
/// character boundary): a listing shows one line of it.
pub const PROMPT_KEEP: usize = 512;

impl Summary {
    /// The summary as the sidecar's JSON text.
    #[must_use]
    pub fn to_json(&self) -> String {
        serde_json::json!({
            "cwd": self.cwd,
            "first_prompt": self.first_prompt,
            "messages": self.messages,
            "cost": self.cost,
            "runs": self.runs,
            "state_keys": self.state_keys,
        })
        .to_string()
    }

    /// Reads a sidecar's JSON text; `None` when it is not a summary.
    #[must_use]
    pub fn from_json(text: &[u8]) -> Option<Self> {
        let v: serde_json::Value = serde_json::from_slice(text).ok()?;
        let o = v.as_object()?;
        let text = |k: &str| o.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        Some(Self {
            cwd: text("cwd"),
            first_prompt: text("first_prompt"),
            messages: o.get("messages").and_then(serde_json::Value::as_u64)?,
            cost: o.get("cost").and_then(serde_json::Value::as_f64),
            runs: o
                .get("runs")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0),
            state_keys: o
                .get("state_keys")
                .and_then(|v| serde_json::from_value(v.clone()).ok()),
        })
    }

    /// Whether the session may hold a `plugin_state` entry of `plugin` and
    /// `key`: `false` only when [`Summary::state_keys`] is known and does
    /// not name them.
    #[must_use]
    pub fn may_hold_state(&self, plugin: &str, key: &str) -> bool {
        self.state_keys.as_ref().is_none_or(|keys| {
            keys.iter()
                .any(|(p, k)| p.as_str() == plugin && k.as_str() == key)
        })
    }

    /// Adds `plugin` and `key` to [`Summary::state_keys`] when it is known
    /// and does not name them yet.
    pub fn note_state_key(&mut self, plugin: &str, key: &str) {
        if let Some(keys) = &mut self.state_keys
            && !keys
                .iter()
                .any(|(p, k)| p.as_str() == plugin && k.as_str() == key)
        {
            keys.push((plugin.to_owned(), key.to_owned()));
        }
    }

    /// Keeps the first prompt when none is kept yet (cut to
    /// [`PROMPT_KEEP`] bytes).
    pub fn note_prompt(&mut self, text: &str) {
        if self.first_prompt.is_none() && !text.trim().is_empty() {
            let mut end = text.len().min(PROMPT_KEEP);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            self.first_prompt = Some(text[..end].to_owned());
        }
    }

    /// Adds an ended run's cost (`None`: unknown, which makes the sum
    /// unknown).
    pub fn note_run_end(&mut self, cost: Option<f64>) {
        self.cost = match (self.runs, self.cost, cost) {
            (0, _, c) => c,
            (_, Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        self.runs += 1;
    }
}

/// The clock listings measure dates against: `SMITH_NOW_MS` (milliseconds
/// since the Unix epoch) when set to a number — a fixed clock for tests —
/// else the system clock.
#[must_use]
pub fn listing_now_ms() -> u64 {
    std::env::var("SMITH_NOW_MS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(crate::now_ms)
}

/// `ms` for people, against `now_ms` (UTC days): `today 14:20`,
/// `yesterday 09:05`, `3 days ago` (up to six), else the date `2026-11-02`
/// (and the date and minute for a time after `now_ms`).
#[must_use]
pub fn human_date(ms: u64, now_ms: u64) -> String {
    const DAY: u64 = 86_400_000;
    let stamp = smith_diag::log::utc_minute(ms);
    if ms > now_ms {
        return stamp;
    }
    let (day, today) = (ms / DAY, now_ms / DAY);
    let minute = &stamp[11..];
    match today - day {
        0 => format!("today {minute}"),
        1 => format!("yesterday {minute}"),
        n @ 2..=6 => format!("{n} days ago"),
        _ => stamp[..10].to_owned(),
    }
}

/// A working folder for people: under `home`, spelled with `~`.
#[must_use]
pub fn project_label(cwd: &str, home: Option<&Path>) -> String {
    if let Some(home) = home
        .and_then(Path::to_str)
        .filter(|h| !h.is_empty() && *h != "/")
        && let Some(rest) = cwd.strip_prefix(home)
        && (rest.is_empty() || rest.starts_with('/'))
    {
        return format!("~{rest}");
    }
    cwd.to_owned()
}

/// `text` as one line of at most `max` characters: whitespace runs
/// (newlines included) become one space, control characters are dropped,
/// and a cut ends in `…`.
#[must_use]
pub fn one_line(text: &str, max: usize) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let joined: String = words
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    if joined.chars().count() <= max {
        return joined;
    }
    let mut cut: String = joined.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Whether a session recorded in `cwd` belongs to the project `here`: the
/// same folder, compared as written and then resolved (symbolic links).
#[must_use]
pub fn same_project(cwd: &str, here: &Path) -> bool {
    let cwd = Path::new(cwd);
    cwd == here
        || matches!(
            (std::fs::canonicalize(cwd), std::fs::canonicalize(here)),
            (Ok(a), Ok(b)) if a == b
        )
}

/// Whether a listing of the project `here` shows `info`: a session of that
/// project, or one whose project is unknown (it cannot be placed).
#[must_use]
pub fn in_project(info: &crate::SessionInfo, here: &Path) -> bool {
    info.summary
        .as_ref()
        .and_then(|m| m.cwd.as_deref())
        .is_none_or(|cwd| same_project(cwd, here))
}

/// One row of a session picker: `name · when · N msgs · $cost · first
/// prompt · project`, dates against `now_ms`.
#[must_use]
pub fn picker_row(info: &crate::SessionInfo, now_ms: u64, home: Option<&Path>) -> String {
    let m = info.summary.as_ref();
    let name = info
        .name
        .clone()
        .unwrap_or_else(|| info.id.to_hex()[..8].to_owned());
    let messages = m.map_or_else(|| "? msgs".to_owned(), |m| format!("{} msgs", m.messages));
    let cost = m.and_then(|m| m.cost).map_or_else(
        || "cost unknown".to_owned(),
        |c| {
            if c > 0.0 && c < 0.01 {
                format!("${c:.4}")
            } else {
                format!("${c:.2}")
            }
        },
    );
    let project = m
        .and_then(|m| m.cwd.as_deref())
        .map_or_else(|| "project unknown".to_owned(), |c| project_label(c, home));
    let mut row = format!(
        "{name} · {} · {messages} · {cost}",
        human_date(info.modified_ms, now_ms)
    );
    if let Some(prompt) = m.and_then(|m| m.first_prompt.as_deref()) {
        row.push_str(" · ");
        row.push_str(&one_line(prompt, 40));
    }
    row.push_str(" · ");
    row.push_str(&project);
    row
}

/// Reads the sidecar at `path`; `None` when it is missing or unreadable.
pub(crate) fn read(path: &Path) -> Option<Summary> {
    let bytes = std::fs::read(path).ok()?;
    Summary::from_json(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_round_trips_and_sums_costs() {
        let mut s = Summary::default();
        s.note_prompt("  ");
        assert_eq!(s.first_prompt, None);
        s.note_prompt("fix the lexer");
        s.note_prompt("second");
        s.note_run_end(Some(0.25));
        s.note_run_end(Some(0.5));
        s.messages = 4;
        s.cwd = Some("/home/u/p".into());
        let back = Summary::from_json(s.to_json().as_bytes()).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.first_prompt.as_deref(), Some("fix the lexer"));
        assert_eq!(back.cost, Some(0.75));
        s.note_run_end(None);
        assert_eq!(s.cost, None);
        s.note_run_end(Some(1.0));
        assert_eq!(s.cost, None, "one unknown cost makes the sum unknown");
        let mut long = Summary::default();
        long.note_prompt(&"é".repeat(400));
        assert!(long.first_prompt.unwrap().len() <= PROMPT_KEEP);
        assert_eq!(Summary::from_json(b"not json"), None);
    }

    #[test]
    fn dates_read_as_people_say_them() {
        // 2026-12-04 14:20 UTC.
        let now = 1_796_394_000_000;
        assert_eq!(smith_diag::log::utc_minute(now), "2026-12-04 14:20");
        let h = 3_600_000;
        assert_eq!(human_date(now - h, now), "today 13:20");
        assert_eq!(human_date(now - 20 * h, now), "yesterday 18:20");
        assert_eq!(human_date(now - 3 * 24 * h, now), "3 days ago");
        assert_eq!(human_date(now - 32 * 24 * h, now), "2026-11-02");
        assert_eq!(human_date(now + h, now), "2026-12-04 15:20");
    }

    #[test]
    fn projects_and_prompts_fit_one_line() {
        let home = Path::new("/home/ada");
        assert_eq!(project_label("/home/ada/src/x", Some(home)), "~/src/x");
        assert_eq!(project_label("/home/ada", Some(home)), "~");
        assert_eq!(project_label("/home/adam/x", Some(home)), "/home/adam/x");
        assert_eq!(project_label("/srv/x", None), "/srv/x");
        assert_eq!(one_line("fix\n  the\tlexer", 40), "fix the lexer");
        assert_eq!(one_line("abcdefgh", 5), "abcd…");
    }
}
