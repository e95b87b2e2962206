//! `smith completions SHELL` and `smith man [COMMAND...]`: shell completion
//! scripts and manual pages, generated from the same argument definitions
//! as the command-line reference (docs/cli.md), so none of the three can
//! drift from what the binary accepts.

use std::io::Write as _;

/// `smith completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// `smith man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// A command path (`session list`) for that command's page; without it, the page of `smith` itself, which lists every command.
    #[arg(value_name = "COMMAND")]
    pub words: Vec<String>,
}

/// Writes the completion script for `args.shell` to standard output.
///
/// # Errors
///
/// Only when standard output cannot be written.
pub fn completions(args: CompletionArgs, root: clap::Command) -> anyhow::Result<u8> {
    let mut root = root;
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut root, "smith", &mut out);
    write_out(&out)
}

/// Writes the manual page (roff) of `smith` or of the command `args.words`
/// name to standard output.
///
/// # Errors
///
/// Only when standard output cannot be written; an unknown command is
/// reported and ends with status 2.
pub fn man(args: ManArgs, root: clap::Command) -> anyhow::Result<u8> {
    let mut cmd = root.bin_name("smith");
    cmd.build();
    let mut path = String::from("smith");
    for word in &args.words {
        let Some(sub) = cmd.find_subcommand(word).cloned() else {
            let known: Vec<&str> = cmd
                .get_subcommands()
                .map(clap::Command::get_name)
                .filter(|n| *n != "help" || path == "smith")
                .collect();
            crate::report::diagnostic(
                &smith_diag::Diagnostic::error(
                    "cli.unknown-command",
                    format!("`{path}` has no subcommand `{word}`, so it has no manual page"),
                    format!("the subcommands of `{path}` are: {}", known.join(", ")),
                    format!("run `smith man` for the page of smith itself, or `{path} --help`"),
                )
                .with_value(word.clone())
                .with_surface(smith_diag::Surface::other(
                    "the COMMAND given to `smith man`",
                )),
            );
            return Ok(2);
        };
        path.push(' ');
        path.push_str(sub.get_name());
        cmd = sub.bin_name(&path);
    }
    let mut out = Vec::new();
    // The page's title: `smith-session-list`, as pages of subcommands are
    // named.
    clap_mangen::Man::new(cmd)
        .title(path.replace(' ', "-"))
        .render(&mut out)?;
    write_out(ascii_roff(&String::from_utf8_lossy(&out)).as_bytes())
}

/// `roff` with every character outside ASCII written as the roff escape
/// `\[uXXXX]`, so that the page is read right by a formatter that takes
/// its input as Latin-1 (groff without `-k`), as well as by `man`.
fn ascii_roff(roff: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(roff.len());
    for c in roff.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let _ = write!(out, "\\[u{:04X}]", u32::from(c));
        }
    }
    out
}

fn write_out(bytes: &[u8]) -> anyhow::Result<u8> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(bytes)?;
    stdout.flush()?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn characters_outside_ascii_become_roff_escapes() {
        assert_eq!(
            super::ascii_roff("a \u{2014}continue \u{1F600} b"),
            "a \\[u2014]continue \\[u1F600] b"
        );
    }
}
