//! The command-line reference in `docs/cli.md` is generated from the clap
//! definitions, and a test fails when the two differ, so the reference can
//! never drift from what the binary accepts. `SMITH_BLESS=1 cargo test -p
//! smith cli_reference` rewrites the file.
//!
//! What does not fit a command's help (the output formats' object shapes)
//! is written by hand in `src/cli_doc/` and appended in [`APPENDICES`]
//! order; edit it there, not in `docs/cli.md`.

use std::fmt::Write as _;

use clap::Command;

/// Hand-written sections that follow the generated reference.
const APPENDICES: &[&str] = &[include_str!("cli_doc/eval-output-formats.md")];

/// Renders the reference for `root` and every subcommand, depth first.
pub(crate) fn render(root: &Command) -> String {
    let mut out = String::new();
    out.push_str("# Command-line reference\n\n");
    out.push_str(
        "Generated from the binary's own argument definitions; a test fails when \
         this file and the binary disagree (`SMITH_BLESS=1 cargo test -p smith \
         cli_reference` rewrites it). The sections after the commands are kept in \
         `src/cli_doc/`.\n",
    );
    let mut root = root.clone();
    root.build();
    section(&mut out, &root, "smith");
    for appendix in APPENDICES {
        out.push_str(appendix);
    }
    out
}

fn section(out: &mut String, cmd: &Command, path: &str) {
    if cmd.is_hide_set() {
        return;
    }
    let mut cmd = cmd
        .clone()
        .bin_name(path)
        .disable_colored_help(true)
        .term_width(100);
    let help = cmd.render_long_help().to_string();
    let level = if path == "smith" { "##" } else { "###" };
    let _ = write!(out, "\n{level} `{path}`\n\n```text\n");
    for line in help.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str("```\n");
    for sub in cmd.get_subcommands() {
        // clap's own `help` subcommands repeat `--help`; smith's top-level
        // `help` is a real command.
        if sub.get_name() == "help" && path != "smith" {
            continue;
        }
        section(out, sub, &format!("{path} {}", sub.get_name()));
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use crate::Cli;

    #[test]
    fn cli_reference_matches_docs() {
        let rendered = super::render(&Cli::command());
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/cli.md");
        if std::env::var_os("SMITH_BLESS").is_some() {
            std::fs::write(path, &rendered).expect("docs/cli.md is writable");
            return;
        }
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == rendered,
            "docs/cli.md differs from the binary's argument definitions; \
             run `SMITH_BLESS=1 cargo test -p smith cli_reference` and commit the result"
        );
    }
}
