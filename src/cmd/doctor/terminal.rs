//! The terminal: whether standard input and output are one, what `TERM`,
//! `COLORTERM` and `NO_COLOR` say about colors, and the capabilities the
//! interface decides when it starts — the kitty keyboard protocol and
//! synchronized output (asked of the terminal then, so "unknown" here
//! unless `SMITH_TUI_CAPS` says), the clipboard (OSC 52, from the
//! environment, as the interface decides it) and mouse capture
//! (`tui.mouse`). Nothing is written to the terminal and nothing is asked.

use std::io::IsTerminal as _;

use serde_json::json;
use smith_config::options::{COLOR, TUI_MOUSE};
use smith_diag::{Diagnostic, Surface};
use smith_tui::term::{Capabilities, apply_overrides, env_clipboard};

use super::Context;
use super::finding::{Area, Finding};

const AREA: Area = Area::Terminal;

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The findings of the terminal area.
pub fn check(cx: &Context, out: &mut Vec<Finding>) {
    let stdin = std::io::stdin().is_terminal();
    let stdout = std::io::stdout().is_terminal();
    out.push(tty(stdin, stdout));
    out.push(term(stdout));
    out.push(color(cx));
    let overrides = Overrides::from_env();
    out.push(probed(
        &overrides,
        "terminal.keyboard",
        "keyboard protocol (kitty)",
        "keyboard",
        |c| c.keyboard,
        "without it Shift+Enter adds a line only where the terminal answers xterm's modifyOtherKeys, which the interface asks for instead (xterm; tmux with `extended-keys` on), and Esc is told from Alt only by waiting",
    ));
    out.push(probed(
        &overrides,
        "terminal.synchronized",
        "synchronized output (DEC mode 2026)",
        "sync",
        |c| c.synchronized,
        "without it a frame may show half drawn while the terminal paints it",
    ));
    out.extend(clipboard(&overrides));
    out.push(mouse(cx));
}

fn tty(stdin: bool, stdout: bool) -> Finding {
    let check = "terminal.tty";
    let details = json!({"stdin_tty": stdin, "stdout_tty": stdout});
    if stdin && stdout {
        return Finding::ok(
            AREA,
            check,
            "standard input and output are a terminal: `smith` opens the interface here",
        )
        .details(details);
    }
    let which = match (stdin, stdout) {
        (false, false) => "standard input and output are not a terminal",
        (false, true) => "standard input is not a terminal",
        _ => "standard output is not a terminal",
    };
    Finding::info(
        AREA,
        check,
        format!("{which} (a pipe or a file)"),
        "`smith` opens the interface only when both are a terminal; here it runs a prompt or prints the command overview",
        "run smith directly in a terminal for the interface; `smith eval`, `smith rpc` and `smith mcp` need none",
    )
    .details(details)
}

fn term(stdout: bool) -> Finding {
    let check = "terminal.term";
    let term = var("TERM");
    let details = json!({"TERM": term, "TERM_PROGRAM": var("TERM_PROGRAM")});
    match term.as_deref() {
        None | Some("dumb") if stdout => Finding::problem(
            AREA,
            check,
            Diagnostic::warning(
                "doctor.dumb-terminal",
                format!(
                    "TERM is {}",
                    term.as_deref().map_or("unset".to_owned(), |t| format!("`{t}`"))
                ),
                "the interface draws with xterm escape sequences, which a terminal that does not name itself (or calls itself dumb) may show as text",
                "run smith in a terminal emulator, which sets TERM; if this is one, export TERM=xterm-256color",
            )
            .with_surface(Surface::env("TERM")),
        )
        .details(details),
        None => Finding::ok(AREA, check, "TERM is unset (no terminal here)").details(details),
        Some(t) => Finding::ok(AREA, check, format!("TERM={t}")).details(details),
    }
}

fn color(cx: &Context) -> Finding {
    let check = "terminal.color";
    let setting = cx
        .config
        .and_then(|c| Some((c.str(&COLOR)?.to_owned(), c.source(&COLOR)?.to_string())));
    let (value, source) = setting.unwrap_or_else(|| ("auto".to_owned(), "default".to_owned()));
    let no_color = smith_tui::term::no_color();
    let colorterm = var("COLORTERM");
    let term = var("TERM").unwrap_or_default();
    let truecolor = colorterm
        .as_deref()
        .is_some_and(|c| c.eq_ignore_ascii_case("truecolor") || c.eq_ignore_ascii_case("24bit"));
    let details = json!({
        "color": value,
        "color_source": source,
        "NO_COLOR": no_color,
        "COLORTERM": colorterm,
        "truecolor": truecolor,
    });
    if no_color {
        return Finding::info(
            AREA,
            check,
            "colors: off (NO_COLOR is set)",
            "NO_COLOR turns colors off in the interface and in diagnostics",
            "unset NO_COLOR for colors",
        )
        .details(details);
    }
    if value == "never" {
        return Finding::info(
            AREA,
            check,
            format!("colors: off (color is `never`, from {source})"),
            "the `color` option turns colors off in the interface and in diagnostics",
            "set `color` to `auto` (`smith config set color auto`) for colors",
        )
        .details(details);
    }
    if truecolor {
        return Finding::ok(
            AREA,
            check,
            format!(
                "colors: on, 24-bit (COLORTERM={}; color `{value}` from {source})",
                colorterm.unwrap_or_default()
            ),
        )
        .details(details);
    }
    Finding::info(
        AREA,
        check,
        format!(
            "colors: on, but the terminal does not say it shows 24-bit color (COLORTERM is {}{})",
            colorterm.as_deref().map_or("unset".to_owned(), |c| format!("`{c}`")),
            if term.contains("256color") {
                format!("; TERM={term} promises 256")
            } else {
                String::new()
            }
        ),
        "themes are drawn in 24-bit color; a terminal without it shows the nearest colors it has, which may be wrong",
        "nothing to do if the interface's colors look right; otherwise use a terminal with 24-bit color (most set COLORTERM=truecolor)",
    )
    .details(details)
}

/// What `SMITH_TUI_CAPS` decides, read with the interface's own parser:
/// applied once over nothing and once over everything, a capability it
/// sets comes out the same both times.
struct Overrides {
    low: Capabilities,
    high: Capabilities,
    probe: Option<bool>,
    spec: String,
}

impl Overrides {
    fn from_env() -> Overrides {
        let spec = std::env::var("SMITH_TUI_CAPS").unwrap_or_default();
        let mut low = Capabilities::PLAIN;
        let mut high = Capabilities {
            color: true,
            synchronized: true,
            keyboard: true,
            clipboard: true,
            modify_other_keys: true,
        };
        let (mut probe_low, mut probe_high) = (false, true);
        apply_overrides(&mut low, &mut probe_low, &spec);
        apply_overrides(&mut high, &mut probe_high, &spec);
        Overrides {
            low,
            high,
            probe: (probe_low == probe_high).then_some(probe_low),
            spec,
        }
    }

    fn get(&self, field: fn(&Capabilities) -> bool) -> Option<bool> {
        (field(&self.low) == field(&self.high)).then(|| field(&self.low))
    }
}

fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

/// A capability the interface asks the terminal about when it starts.
fn probed(
    overrides: &Overrides,
    check: &'static str,
    name: &str,
    key: &str,
    field: fn(&Capabilities) -> bool,
    without: &str,
) -> Finding {
    if let Some(on) = overrides.get(field) {
        return Finding::ok(
            AREA,
            check,
            format!("{name}: {} (SMITH_TUI_CAPS={})", on_off(on), overrides.spec),
        )
        .details(json!({"state": on_off(on), "source": "SMITH_TUI_CAPS"}));
    }
    if overrides.probe == Some(false) {
        return Finding::info(
            AREA,
            check,
            format!("{name}: off (SMITH_TUI_CAPS turns the terminal probe off)"),
            without.to_owned(),
            format!("if your terminal has it, add `{key}=on` to SMITH_TUI_CAPS"),
        )
        .details(json!({"state": "off", "source": "SMITH_TUI_CAPS"}));
    }
    Finding::info(
        AREA,
        check,
        format!(
            "{name}: unknown; the interface asks the terminal when it starts (waiting at most {} ms), and doctor asks nothing",
            smith_tui::term::PROBE_BUDGET.as_millis()
        ),
        without.to_owned(),
        format!("nothing to do; to skip the question, set SMITH_TUI_CAPS={key}=on (or off)"),
    )
    .details(json!({"state": "unknown", "source": "probe"}))
}

fn clipboard(overrides: &Overrides) -> Vec<Finding> {
    let check = "terminal.clipboard";
    let named = [var("TERM"), var("TERM_PROGRAM")]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ");
    let mut out = Vec::new();
    if let Some(on) = overrides.get(|c| c.clipboard) {
        out.push(
            Finding::ok(
                AREA,
                check,
                format!(
                    "clipboard (OSC 52): {} (SMITH_TUI_CAPS={})",
                    on_off(on),
                    overrides.spec
                ),
            )
            .details(json!({"state": on_off(on), "source": "SMITH_TUI_CAPS"})),
        );
    } else if env_clipboard() {
        out.push(
            Finding::ok(
                AREA,
                check,
                format!("clipboard (OSC 52): on, the terminal is one known to accept it ({named})"),
            )
            .details(json!({"state": "on", "source": "environment"})),
        );
    } else {
        out.push(
            Finding::info(
                AREA,
                check,
                "clipboard (OSC 52): off; TERM and TERM_PROGRAM name no terminal known to accept it",
                "copying in the interface writes OSC 52 only to kitty, WezTerm, foot, Alacritty, Ghostty and iTerm2, since no terminal answers a query for it",
                "if your terminal accepts OSC 52, set SMITH_TUI_CAPS=clipboard=on",
            )
            .details(json!({"state": "off", "source": "environment"})),
        );
    }
    if var("TMUX").is_some() {
        out.push(Finding::info(
            AREA,
            check,
            "inside tmux: OSC 52 and the keyboard protocol reach the outer terminal only as tmux allows",
            "tmux passes clipboard writes on only with `set-clipboard on`, and Shift+Enter and the kitty keyboard protocol only with `extended-keys`",
            "add `set -g set-clipboard on` (and `set -g extended-keys on`) to ~/.tmux.conf",
        ));
    }
    out
}

fn mouse(cx: &Context) -> Finding {
    let check = "terminal.mouse";
    let setting = cx
        .config
        .and_then(|c| Some((c.bool(&TUI_MOUSE)?, c.source(&TUI_MOUSE)?.to_string())));
    let (capture, source) = setting.unwrap_or((true, "default".to_owned()));
    let details = json!({"capture": capture, "source": source, "terminal_support": "unknown"});
    if capture {
        Finding::ok(
            AREA,
            check,
            format!(
                "mouse: captured (tui.mouse from {source}): the wheel scrolls the transcript in terminals that report it (not asked here); selecting text takes Shift in most terminals"
            ),
        )
        .details(details)
    } else {
        Finding::ok(
            AREA,
            check,
            format!("mouse: not captured (tui.mouse false, from {source}): the terminal keeps its own selection"),
        )
        .details(details)
    }
}
