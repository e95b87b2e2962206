//! The request context: what the model is told before the conversation.
//!
//! Every runtime's system prompt is assembled here, and only here. Today it
//! is smith's own framing of the work (who it is, where it works); the
//! [`Context`] builder takes further fragments — what extension plugins
//! contribute — which are appended in the order they are given, so a
//! frontend that learns of more context feeds it in without knowing how the
//! prompt is laid out.

use std::path::{Path, PathBuf};

/// The pieces a runtime's system prompt is assembled from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Context {
    cwd: PathBuf,
    fragments: Vec<Fragment>,
}

/// A piece of context contributed from outside the host (a plugin's prompt
/// fragment), with who contributed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fragment {
    /// Who contributed it (e.g. a plugin's `org/name`).
    pub source: String,
    /// The text, as the model should read it.
    pub text: String,
}

impl Context {
    /// The context of a runtime whose tools work in `cwd`.
    pub fn new(cwd: &Path) -> Self {
        Context {
            cwd: cwd.to_owned(),
            fragments: Vec::new(),
        }
    }

    /// Adds a fragment after those already given.
    #[must_use]
    pub fn with_fragment(mut self, fragment: Fragment) -> Self {
        self.fragments.push(fragment);
        self
    }

    /// The system prompt: smith's framing, then each fragment's text as a
    /// paragraph of its own.
    pub fn system_prompt(&self) -> String {
        let mut prompt = format!(
            "You are smith, a coding agent. Work in {} using the tools you are given.",
            self.cwd.display()
        );
        for fragment in &self.fragments {
            prompt.push_str("\n\n");
            prompt.push_str(&fragment.text);
        }
        prompt
    }
}

/// The system prompt of a runtime working in `cwd` with no contributed
/// fragments.
pub fn system_prompt(cwd: &Path) -> String {
    Context::new(cwd).system_prompt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_names_the_working_directory() {
        assert_eq!(
            system_prompt(Path::new("/work/p")),
            "You are smith, a coding agent. Work in /work/p using the tools you are given."
        );
    }

    #[test]
    fn fragments_follow_in_order_as_paragraphs() {
        let context = Context::new(Path::new("/w"))
            .with_fragment(Fragment {
                source: "acme/rules".into(),
                text: "Prefer small diffs.".into(),
            })
            .with_fragment(Fragment {
                source: "acme/style".into(),
                text: "Use tabs.".into(),
            });
        assert_eq!(
            context.system_prompt(),
            "You are smith, a coding agent. Work in /w using the tools you are given.\n\nPrefer small diffs.\n\nUse tabs."
        );
    }
}
