//! `smith help plugins [ITEM]`: the plugin contract's reference, generated
//! from the WIT doc comments (see `smith_plugins::help`).

/// `smith help`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The topic: `plugins`.
    topic: Option<String>,
    /// One item of the topic (`provider.encode`, `extension`, `stream-event`...).
    item: Option<String>,
}

/// Runs `smith help`.
///
/// # Errors
///
/// Only when standard output cannot be written.
pub fn run(args: Args) -> anyhow::Result<u8> {
    match args.topic.as_deref() {
        Some("plugins") => match smith_plugins::help::render(args.item.as_deref()) {
            Ok(text) => {
                print!("{text}");
                Ok(0)
            }
            Err(message) => {
                eprintln!("smith help plugins: {message}");
                Ok(2)
            }
        },
        None => {
            println!(
                "smith help TOPIC [ITEM]\n\nTopics:\n  plugins   the smith:plugin@1 contract: worlds, interfaces, functions, types\n\nRun `smith --help` for the commands."
            );
            Ok(0)
        }
        Some(other) => {
            eprintln!(
                "smith help: there is no help topic {other:?}; the topics are: plugins (run `smith --help` for the commands)"
            );
            Ok(2)
        }
    }
}
