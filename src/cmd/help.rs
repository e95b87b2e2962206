//! `smith help [COMMAND...]` and `smith help plugins [ITEM]`.
//!
//! `help COMMAND...` prints a command's long help, as `smith COMMAND --help`
//! does. `help plugins [ITEM]` prints the plugin contract's reference,
//! generated from the WIT doc comments (see `smith_plugins::help`).

/// `smith help`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A command path (`session list`), or `plugins [ITEM]` for the plugin
    /// contract (`plugins provider.encode`, `plugins stream-event`...).
    #[arg(value_name = "TOPIC")]
    words: Vec<String>,
}

/// Runs `smith help`; `root` is the binary's command tree.
///
/// # Errors
///
/// Only when standard output cannot be written.
pub fn run(args: Args, root: clap::Command) -> anyhow::Result<u8> {
    let words = args.words;
    if words.first().map(String::as_str) == Some("plugins") {
        if words.len() > 2 {
            eprintln!(
                "smith help plugins: expected at most one item, got {:?}; run `smith help plugins` for the list",
                &words[1..]
            );
            return Ok(2);
        }
        return match smith_plugins::help::render(words.get(1).map(String::as_str)) {
            Ok(text) => {
                print!("{text}");
                Ok(0)
            }
            Err(message) => {
                eprintln!("smith help plugins: {message}");
                Ok(2)
            }
        };
    }
    let mut cmd = root.bin_name("smith");
    cmd.build();
    let mut path = String::from("smith");
    for word in &words {
        let Some(sub) = cmd.find_subcommand(word).cloned() else {
            let known: Vec<&str> = cmd
                .get_subcommands()
                .map(clap::Command::get_name)
                .filter(|n| *n != "help" || path == "smith")
                .collect();
            eprintln!(
                "smith help: `{path}` has no subcommand {word:?}; the subcommands are: {}{}",
                known.join(", "),
                if path == "smith" {
                    " (and the topic `plugins`)"
                } else {
                    ""
                }
            );
            return Ok(2);
        };
        path.push(' ');
        path.push_str(sub.get_name());
        cmd = sub.bin_name(&path);
    }
    let text = cmd.render_long_help();
    print!("{text}");
    if words.is_empty() {
        println!(
            "\nHelp topics:\n  plugins [ITEM]  the smith:plugin@1 contract: worlds, interfaces, functions, types"
        );
    }
    Ok(0)
}
