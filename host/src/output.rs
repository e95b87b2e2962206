//! How the headless frontends print: the human rendering of runtime events
//! (streamed text on standard output, one line per tool and every error on
//! standard error), the usage line, the final `result` record of a JSON
//! stream, exit codes, and diagnostics of the commands that report with a
//! configured style.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Write;
use std::sync::Arc;

use smith_config::Config;
use smith_config::options;
use smith_diag::{Diagnostic, Style};
use smith_engine::journal::store::StoreJournal;
use smith_engine::protocol::{
    CompactionOutcome, CompactionReason, Event, MutationState, StopCause, ToolStatus,
};
use smith_engine::provider::Usage;
use smith_engine::replay::{Comparison, Verdict};

/// The style for diagnostics on stderr given the resolved `color` option.
pub fn style(config: Option<&Config>) -> Style {
    match config.and_then(|c| c.str(&options::COLOR)) {
        Some("always") => Style::COLOR,
        Some("never") => Style::PLAIN,
        _ => Style::for_stderr(),
    }
}

/// Prints a diagnostic: JSON on stdout for `--json`, else text on stderr.
pub fn report(diag: &Diagnostic, json: bool, style: Style) {
    if json {
        println!("{}", serde_json::json!({ "error": diag.to_json() }));
    } else {
        eprint!("{}", diag.render_terminal(style));
    }
    smith_diag::log::report(diag);
}

/// The usage line printed after a run: tokens by kind and the cost
/// (`unknown` where the provider did not say).
pub fn format_usage(usage: &Usage, cost: Option<f64>) -> String {
    let n = |v: Option<u64>| v.map_or_else(|| "unknown".to_owned(), |v| v.to_string());
    let cost = cost.map_or_else(|| "unknown".to_owned(), |c| format!("${c:.4}"));
    format!(
        "usage: {} input, {} output, {} cache read, {} cache write tokens; cost {cost}",
        n(usage.input),
        n(usage.output),
        n(usage.cache_read),
        n(usage.cache_write)
    )
}

/// Whether `c` could drive a terminal: a C0 control other than newline and
/// tab (ESC, BEL, CR, backspace...), DEL, or a C1 control (CSI U+009B, OSC
/// U+009D...).
fn drives_terminal(c: char) -> bool {
    // Unicode's control category (Cc) is exactly C0, DEL and C1.
    c.is_control() && c != '\n' && c != '\t'
}

/// `text` made inert for a terminal: every control character that could
/// start an escape sequence or move the cursor (see [`drives_terminal`]) is
/// shown as visible text instead — `\x1b` for a C0 control or DEL,
/// `\u{9b}` for a C1 control — so model text and tool output print as what
/// they say and never change the terminal (its title, screen, colors or
/// cursor). Newlines and tabs are kept; text without controls is borrowed
/// unchanged.
pub fn inert(text: &str) -> Cow<'_, str> {
    if !text.chars().any(drives_terminal) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !drives_terminal(c) {
            out.push(c);
        } else if u32::from(c) < 0x80 {
            // Writing to a String cannot fail.
            let _ = write!(out, "\\x{:02x}", u32::from(c));
        } else {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
    }
    Cow::Owned(out)
}

fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max).collect();
    cut.push('…');
    cut
}

/// The process exit status for how a run stopped: 0 done, 1 error, 2
/// budget or turn limit, 130 aborted.
pub fn exit_code(stop: StopCause) -> u8 {
    match stop {
        StopCause::Done => 0,
        StopCause::Error => 1,
        StopCause::Budget | StopCause::TurnLimit => 2,
        StopCause::Aborted => 130,
    }
}

/// The human frontend shared by eval and replay: streamed assistant text on
/// `out`, one line per tool and every error on stderr.
#[derive(Debug, Default)]
pub struct HumanPrinter {
    mid_line: bool,
}

impl HumanPrinter {
    /// Prints one event.
    pub fn event(&mut self, out: &mut impl Write, event: &Event) -> std::io::Result<()> {
        match event {
            Event::MessageDelta { text } => {
                out.write_all(inert(text).as_bytes())?;
                out.flush()?;
                self.mid_line = !text.ends_with('\n');
            }
            Event::ToolExecutionEnd {
                name,
                status,
                content,
                mutation,
                effect_id,
                ..
            } => {
                self.end_line(out)?;
                let status = match status {
                    ToolStatus::Ok => "ok",
                    ToolStatus::Error => "error",
                    ToolStatus::Invalid => "invalid",
                    ToolStatus::Skipped => "skipped",
                    ToolStatus::Aborted => "aborted",
                    ToolStatus::NotRecorded => "not recorded",
                    ToolStatus::Blocked => "blocked",
                };
                let unknown = match (mutation, effect_id) {
                    (Some(MutationState::Unknown), Some(id)) => {
                        format!(" (effect {id}: whether it changed anything is unknown)")
                    }
                    _ => String::new(),
                };
                let line = format!("  [{name}] {status}: {}{unknown}", one_line(content, 100));
                eprintln!("{}", inert(&line));
            }
            Event::CompactionStart { .. } | Event::CompactionEnd { .. } => {
                if let Some(line) = compaction_line(event) {
                    self.end_line(out)?;
                    eprintln!("{}", inert(&line));
                }
            }
            Event::ProviderRetry { wait_ms, error } => {
                self.end_line(out)?;
                let line = format!(
                    "smith: the provider failed ({}): {}; {}",
                    error.kind,
                    one_line(&error.message, 200),
                    retry_words(*wait_ms)
                );
                eprintln!("{}", inert(&line));
            }
            Event::Error(info) => {
                self.end_line(out)?;
                let style = smith_diag::Style::for_stderr();
                // The message may quote model or tool text; the rendering
                // adds its own (trusted) color sequences.
                let mut info = info.clone();
                info.message = inert(&info.message).into_owned();
                eprint!("{}", info.to_diagnostic().render_terminal(style));
            }
            _ => {}
        }
        Ok(())
    }

    /// Ends a line of streamed text, if one is open.
    pub fn end_line(&mut self, out: &mut impl Write) -> std::io::Result<()> {
        if self.mid_line {
            writeln!(out)?;
            self.mid_line = false;
        }
        Ok(())
    }
}

/// The stderr line of plain output for a compaction event: that it began
/// and why, and how it ended (what it saved, or why nothing changed);
/// `None` for any other event.
pub fn compaction_line(event: &Event) -> Option<String> {
    let why = |reason: &CompactionReason| match reason {
        CompactionReason::Manual => "asked for",
        CompactionReason::Threshold => "the context is nearly full",
        CompactionReason::Overflow => "the provider found the context too large",
    };
    match event {
        Event::CompactionStart {
            reason,
            tokens_before,
        } => Some(format!(
            "smith: compacting the conversation ({}): context about {tokens_before} tokens",
            why(reason)
        )),
        Event::CompactionEnd {
            outcome,
            tokens_before,
            tokens_after,
            summarized_messages,
            kept_messages,
            error,
            detail,
            ..
        } => {
            let because = |fallback: &str| {
                error
                    .as_ref()
                    .map_or_else(|| fallback.to_owned(), |e| one_line(&e.message, 400))
            };
            Some(match outcome {
                CompactionOutcome::Compacted => {
                    let tokens = tokens_after.map_or_else(|| "?".to_owned(), |t| t.to_string());
                    let bytes = detail.map_or_else(String::new, |d| {
                        format!(" ({} -> {} bytes)", d.bytes_before, d.bytes_after)
                    });
                    let pruned = detail
                        .filter(|d| d.thinking_dropped + d.results_clipped + d.reads_superseded > 0)
                        .map_or_else(String::new, |d| {
                            format!(
                                "pruned {} reasoning block(s), {} long tool result(s) and {} superseded read(s); ",
                                d.thinking_dropped, d.results_clipped, d.reads_superseded
                            )
                        });
                    let left_out =
                        detail
                            .filter(|d| d.messages_left_out > 0)
                            .map_or_else(String::new, |d| {
                                format!(
                                    " (the {} oldest left out of the summary, which says so)",
                                    d.messages_left_out
                                )
                            });
                    // Why a summary was not used, when it was not.
                    let note = error
                        .as_ref()
                        .map_or_else(String::new, |e| format!("; {}", one_line(&e.message, 400)));
                    match summarized_messages {
                        Some(0) | None => format!(
                            "smith: compacted: {pruned}nothing summarized; context about {tokens_before} -> {tokens} tokens{bytes}{note}"
                        ),
                        Some(n) => format!(
                            "smith: compacted: {pruned}{n} messages summarized{left_out}, {} kept; context about {tokens_before} -> {tokens} tokens{bytes}",
                            kept_messages.unwrap_or(0),
                        ),
                    }
                }
                CompactionOutcome::Skipped => format!(
                    "smith: not compacted: {}",
                    because("there is nothing to summarize yet")
                ),
                CompactionOutcome::Aborted => {
                    "smith: compaction interrupted; the context is unchanged".to_owned()
                }
                CompactionOutcome::Failed => format!(
                    "smith: compaction failed, the context is unchanged: {}",
                    because("no reason was given")
                ),
            })
        }
        _ => None,
    }
}

/// What happens after a failed request that is sent again, in words:
/// `sending again in 3 s`, or `sending again now` (also to the next target
/// of a failover group).
pub fn retry_words(wait_ms: u64) -> String {
    if wait_ms == 0 {
        "sending again now".to_owned()
    } else if wait_ms < 1000 {
        format!("sending again in {wait_ms} ms")
    } else {
        format!("sending again in {} s", wait_ms.div_ceil(1000))
    }
}

/// The final `result` record of a JSON stream.
pub fn result_record(
    stop: StopCause,
    text: &str,
    usage: &Usage,
    cost: Option<f64>,
    session: serde_json::Value,
) -> serde_json::Value {
    serde_json::json!({
        "type": "result",
        "stop": stop,
        "exit_code": exit_code(stop),
        "text": text,
        "usage": usage,
        "cost": cost,
        "session": session,
    })
}

/// The human report of `smith replay --compare`: one line per effect
/// compared (with each divergence's expected and actual value), then the
/// counts of `summary`.
///
/// # Errors
///
/// When `out` cannot be written.
pub fn print_comparisons(
    out: &mut impl Write,
    comparisons: &[Comparison],
    summary: &serde_json::Value,
) -> std::io::Result<()> {
    for c in comparisons {
        match &c.verdict {
            Verdict::Match => writeln!(out, "compare {} {}: match", c.effect_id, c.tool)?,
            Verdict::SkippedUnknown => writeln!(
                out,
                "compare {} {}: skipped-unknown (no completion was recorded; never re-run)",
                c.effect_id, c.tool
            )?,
            Verdict::SkippedUnavailable => writeln!(
                out,
                "compare {} {}: skipped-unavailable (not a built-in tool)",
                c.effect_id, c.tool
            )?,
            Verdict::Diverged { divergences } => {
                writeln!(out, "compare {} {}: DIVERGED", c.effect_id, c.tool)?;
                for d in divergences {
                    writeln!(out, "  {}: expected {}", d.field, d.expected)?;
                    writeln!(out, "  {}: got      {}", d.field, d.got)?;
                }
            }
        }
    }
    writeln!(
        out,
        "compare: {} matched, {} diverged, {} skipped-unknown, {} skipped-unavailable",
        summary["matched"],
        summary["diverged"],
        summary["skipped_unknown"],
        summary["skipped_unavailable"]
    )
}

/// What a mode prints on standard error when a signal (or Ctrl+C) ended
/// it: that session `name` is saved, and the command that continues it.
pub fn interrupted_line(name: &str, resume: &str) -> String {
    format!("smith: interrupted; session {name} is saved — continue it with: {resume}")
}

/// The end of a `smith eval` run: says where the session `name` is (how to
/// continue it after an interrupt), and removes the temporary store, or
/// keeps it after an interrupt and says where.
pub fn finish_session(
    name: &str,
    journal: Arc<StoreJournal>,
    temp: Option<tempfile::TempDir>,
    stop: StopCause,
    json: bool,
) {
    let interrupted = stop == StopCause::Aborted;
    if temp.is_none() {
        if interrupted {
            eprintln!(
                "{}",
                interrupted_line(name, &format!("smith eval --session {name} \"<prompt>\""))
            );
        } else if !json {
            eprintln!("session: {name}");
        }
    }
    drop(journal);
    // Without an interrupt, dropping the temporary directory removes it.
    if let Some(dir) = temp
        && interrupted
    {
        let kept = dir.keep();
        eprintln!(
            "smith: interrupted; the temporary session store is kept at {} for inspection",
            kept.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_sequences_are_shown_not_executed() {
        // OSC: set the window title, ended by BEL.
        assert_eq!(inert("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");
        // CSI: switch to the alternate screen.
        assert_eq!(inert("a\x1b[?1049hb"), "a\\x1b[?1049hb");
        // A bell alone.
        assert_eq!(inert("ding\x07"), "ding\\x07");
        // C1 CSI (U+009B) and OSC (U+009D), which some terminals honor.
        assert_eq!(inert("\u{9b}2J\u{9d}0;x"), "\\u{9b}2J\\u{9d}0;x");
        // Carriage return, backspace, DEL and NUL.
        assert_eq!(inert("ok\rno\x08\x7f\0"), "ok\\x0dno\\x08\\x7f\\x00");
        for text in [
            inert("\x1b]0;pwned\x07\x1b[?1049h"),
            inert("\u{9b}\u{85}\u{90}"),
        ] {
            assert!(!text.chars().any(drives_terminal), "{text:?}");
        }
    }

    #[test]
    fn plain_text_newlines_and_tabs_are_kept_and_borrowed() {
        let text = "line one\n\tindented — é ✓\n";
        assert!(matches!(inert(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn plain_output_says_when_compaction_ran_what_it_saved_and_why_it_failed() {
        let start = Event::CompactionStart {
            reason: CompactionReason::Threshold,
            tokens_before: 120_000,
        };
        assert_eq!(
            compaction_line(&start).unwrap(),
            "smith: compacting the conversation (the context is nearly full): context about 120000 tokens"
        );
        let end =
            |outcome, error: Option<smith_engine::protocol::ErrorInfo>| Event::CompactionEnd {
                reason: CompactionReason::Overflow,
                outcome,
                tokens_before: 120_000,
                tokens_after: (outcome == CompactionOutcome::Compacted).then_some(9_000),
                summary: None,
                summarized_messages: (outcome == CompactionOutcome::Compacted).then_some(40),
                kept_messages: (outcome == CompactionOutcome::Compacted).then_some(6),
                usage: None,
                error,
                detail: None,
            };
        assert_eq!(
            compaction_line(&end(CompactionOutcome::Compacted, None)).unwrap(),
            "smith: compacted: 40 messages summarized, 6 kept; context about 120000 -> 9000 tokens"
        );
        // With sizes in bytes and what the cheap stage pruned.
        let detail = smith_engine::protocol::CompactionDetail {
            thinking_dropped: 3,
            results_clipped: 2,
            reads_superseded: 1,
            messages_left_out: 0,
            bytes_before: 480_000,
            bytes_after: 36_000,
        };
        let mut summarized = end(CompactionOutcome::Compacted, None);
        if let Event::CompactionEnd { detail: d, .. } = &mut summarized {
            *d = Some(detail);
        }
        assert_eq!(
            compaction_line(&summarized).unwrap(),
            "smith: compacted: pruned 3 reasoning block(s), 2 long tool result(s) and 1 superseded read(s); 40 messages summarized, 6 kept; context about 120000 -> 9000 tokens (480000 -> 36000 bytes)"
        );
        let mut left_out = summarized.clone();
        if let Event::CompactionEnd {
            detail: Some(d), ..
        } = &mut left_out
        {
            d.messages_left_out = 25;
        }
        assert_eq!(
            compaction_line(&left_out).unwrap(),
            "smith: compacted: pruned 3 reasoning block(s), 2 long tool result(s) and 1 superseded read(s); 40 messages summarized (the 25 oldest left out of the summary, which says so), 6 kept; context about 120000 -> 9000 tokens (480000 -> 36000 bytes)"
        );
        let mut pruned_only = summarized.clone();
        if let Event::CompactionEnd {
            summarized_messages,
            ..
        } = &mut pruned_only
        {
            *summarized_messages = Some(0);
        }
        assert_eq!(
            compaction_line(&pruned_only).unwrap(),
            "smith: compacted: pruned 3 reasoning block(s), 2 long tool result(s) and 1 superseded read(s); nothing summarized; context about 120000 -> 9000 tokens (480000 -> 36000 bytes)"
        );
        // A summary that would not have been smaller: the line says why
        // only the cheap stage was applied.
        let no_gain = |message: &str| -> smith_engine::protocol::ErrorInfo {
            serde_json::from_value(serde_json::json!({"kind": "no_gain", "message": message}))
                .unwrap()
        };
        let mut declined = pruned_only.clone();
        if let Event::CompactionEnd { error, .. } = &mut declined {
            *error = Some(no_gain(
                "nothing to gain from a summary — the conversation is about 120000 tokens and with its summary it would be about 9500 tokens, no fewer than the 9000 the cheap stage alone leaves, so the summary was not used; only the cheap stage was applied (it saved about 111000 tokens)",
            ));
        }
        assert_eq!(
            compaction_line(&declined).unwrap(),
            "smith: compacted: pruned 3 reasoning block(s), 2 long tool result(s) and 1 superseded read(s); nothing summarized; context about 120000 -> 9000 tokens (480000 -> 36000 bytes); nothing to gain from a summary — the conversation is about 120000 tokens and with its summary it would be about 9500 tokens, no fewer than the 9000 the cheap stage alone leaves, so the summary was not used; only the cheap stage was applied (it saved about 111000 tokens)"
        );
        // Nothing to gain and nothing pruned: the whole message, not cut.
        let skipped = "nothing to gain — the conversation is about 3404 tokens and with its summary it would be about 3441 tokens, so the summary was not used and nothing was changed; compact again when the conversation has grown, or with instructions asking for a shorter summary";
        assert_eq!(
            compaction_line(&end(CompactionOutcome::Skipped, Some(no_gain(skipped)))).unwrap(),
            format!("smith: not compacted: {skipped}")
        );
        let failure: smith_engine::protocol::ErrorInfo =
            serde_json::from_value(serde_json::json!({
                "kind": "invalid_request",
                "message": "the summary request was too large\nfor the model"
            }))
            .unwrap();
        assert_eq!(
            compaction_line(&end(CompactionOutcome::Failed, Some(failure))).unwrap(),
            "smith: compaction failed, the context is unchanged: the summary request was too large for the model"
        );
        assert_eq!(
            compaction_line(&end(CompactionOutcome::Skipped, None)).unwrap(),
            "smith: not compacted: there is nothing to summarize yet"
        );
        assert_eq!(
            compaction_line(&end(CompactionOutcome::Aborted, None)).unwrap(),
            "smith: compaction interrupted; the context is unchanged"
        );
        assert_eq!(
            compaction_line(&Event::MessageDelta { text: "x".into() }),
            None
        );
    }

    #[test]
    fn the_printer_neutralizes_streamed_text() {
        let mut out = Vec::new();
        let mut printer = HumanPrinter::default();
        for piece in ["hi \x1b]0;pw", "ned\x07 \x1b", "[?1049h\n"] {
            printer
                .event(
                    &mut out,
                    &Event::MessageDelta {
                        text: piece.to_owned(),
                    },
                )
                .unwrap();
        }
        let printed = String::from_utf8(out).unwrap();
        assert_eq!(printed, "hi \\x1b]0;pwned\\x07 \\x1b[?1049h\n");
    }
}
