//! The request context assembled from what extension plugins contribute.
//!
//! Every piece of the system prompt comes from a plugin: its static prompt
//! fragments (declared once in its contributions, smith/product's `base`
//! among them) and the per-turn fragments its `provide.context` export
//! answers. The [`Assembler`] keeps both kinds per plugin and lays them out:
//!
//! - order: ascending `order`, ties by the plugin's load order (the order
//!   plugins were first given to the assembler), then by id;
//! - every piece is a paragraph; paragraphs are joined by one blank line,
//!   and a piece whose text is empty adds no paragraph;
//! - `{cwd}` anywhere in a fragment's text becomes the working directory;
//! - a piece's stable id is `plugin/id` (e.g. `smith/product/base`).
//!
//! Assembly is driven by a generation counter: it moves only when a
//! plugin's fragments actually change, and [`Assembler::prompt`] rebuilds
//! the text only when the generation moved since its last call; otherwise
//! it hands back the cached `Arc<str>` without allocating or touching text.
//!
//! Sizes are reported per piece ([`PieceReport`]) with an estimate of its
//! tokens: [`estimate_tokens`], the byte length divided by three, rounded
//! up: the runtime's own estimate (`smith_engine::agent::compact::BYTES_PER_TOKEN`),
//! so what `smith context` reports is what compaction reckons with.

use std::path::Path;
use std::sync::Arc;

use crate::extension::{Fragment, PromptFragment};

/// The estimated token count of a text of `bytes` bytes: `bytes / 3`
/// rounded up, as the runtime estimates.
pub fn estimate_tokens(bytes: usize) -> usize {
    usize::try_from(smith_engine::agent::compact::tokens_of_bytes(bytes)).unwrap_or(usize::MAX)
}

/// One piece of the assembled context, as reported by
/// [`Assembler::pieces`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PieceReport {
    /// The contributing plugin (`org/name`).
    pub plugin: String,
    /// The fragment's id within the plugin.
    pub id: String,
    /// Its ordering key.
    pub order: i32,
    /// The size of its text (after `{cwd}` is replaced) in bytes.
    pub bytes: usize,
    /// The estimated tokens of its text ([`estimate_tokens`]).
    pub tokens: usize,
    /// Whether it is a per-turn fragment (else a static one).
    pub dynamic: bool,
}

/// A fragment as kept: its id, its text with `{cwd}` replaced, its order.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Piece {
    id: String,
    text: String,
    order: i32,
}

/// One plugin's pieces, static and per-turn.
#[derive(Clone, Debug)]
struct Source {
    plugin: String,
    statics: Vec<Piece>,
    dynamic: Vec<Piece>,
}

/// Assembles the system prompt from plugins' fragments; see the module
/// documentation for the layout.
#[derive(Clone, Debug)]
pub struct Assembler {
    cwd: String,
    sources: Vec<Source>,
    generation: u64,
    cached: Option<(u64, Arc<str>)>,
}

impl Assembler {
    /// An assembler for a runtime working in `cwd` (`{cwd}` in fragment
    /// text becomes `cwd.display()`), with no fragments.
    pub fn new(cwd: &Path) -> Self {
        Assembler {
            cwd: cwd.display().to_string(),
            sources: Vec::new(),
            generation: 0,
            cached: None,
        }
    }

    /// A plugin's static fragments (its contributions), called once per
    /// plugin in load order. Calling it again for the same plugin replaces
    /// its static fragments.
    pub fn add_static(&mut self, plugin: &str, fragments: &[PromptFragment]) {
        let pieces: Vec<Piece> = fragments
            .iter()
            .map(|f| self.piece(&f.id, &f.text, f.order))
            .collect();
        let source = self.source(plugin);
        if source.statics != pieces {
            source.statics = pieces;
            self.generation += 1;
        }
    }

    /// A plugin's per-turn fragments: `Some` replaces that plugin's dynamic
    /// set (the generation changes only if the set differs from what it
    /// had), `None` keeps it.
    pub fn update(&mut self, plugin: &str, fragments: Option<Vec<Fragment>>) {
        let Some(fragments) = fragments else {
            return;
        };
        let pieces: Vec<Piece> = fragments
            .into_iter()
            .map(|f| Piece {
                text: self.expand(f.text),
                id: f.id,
                order: f.order,
            })
            .collect();
        let source = self.source(plugin);
        if source.dynamic != pieces {
            source.dynamic = pieces;
            self.generation += 1;
        }
    }

    /// The generation of the fragment set: it moves whenever a plugin's
    /// fragments change.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The system prompt: assembled only when the generation changed since
    /// the last call, else the cached `Arc` (no allocation, no text work).
    /// No fragments (or only empty ones) give an empty string.
    pub fn prompt(&mut self) -> Arc<str> {
        if let Some((generation, prompt)) = &self.cached
            && *generation == self.generation
        {
            return Arc::clone(prompt);
        }
        let ordered = self.ordered();
        let len: usize = ordered
            .iter()
            .map(|(_, _, piece)| piece.text.len() + 2)
            .sum();
        let mut text = String::with_capacity(len);
        for (_, _, piece) in ordered.iter().filter(|(_, _, p)| !p.text.is_empty()) {
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(&piece.text);
        }
        let prompt: Arc<str> = Arc::from(text);
        self.cached = Some((self.generation, Arc::clone(&prompt)));
        prompt
    }

    /// Every piece in assembly order, with its size.
    pub fn pieces(&self) -> Vec<PieceReport> {
        self.ordered()
            .into_iter()
            .map(|(source, dynamic, piece)| PieceReport {
                plugin: source.plugin.clone(),
                id: piece.id.clone(),
                order: piece.order,
                bytes: piece.text.len(),
                tokens: estimate_tokens(piece.text.len()),
                dynamic,
            })
            .collect()
    }

    /// The pieces in assembly order, each with its source and whether it
    /// is per-turn.
    fn ordered(&self) -> Vec<(&Source, bool, &Piece)> {
        let mut all: Vec<(usize, &Source, bool, &Piece)> = Vec::new();
        for (index, source) in self.sources.iter().enumerate() {
            all.extend(source.statics.iter().map(|p| (index, source, false, p)));
            all.extend(source.dynamic.iter().map(|p| (index, source, true, p)));
        }
        // Stable: a static piece stays before a per-turn one of the same
        // plugin, order and id.
        all.sort_by(|a, b| (a.3.order, a.0, &a.3.id).cmp(&(b.3.order, b.0, &b.3.id)));
        all.into_iter()
            .map(|(_, source, dynamic, piece)| (source, dynamic, piece))
            .collect()
    }

    /// The plugin's source, added after the others when it is new.
    fn source(&mut self, plugin: &str) -> &mut Source {
        let index = match self.sources.iter().position(|s| s.plugin == plugin) {
            Some(index) => index,
            None => {
                self.sources.push(Source {
                    plugin: plugin.to_owned(),
                    statics: Vec::new(),
                    dynamic: Vec::new(),
                });
                self.sources.len() - 1
            }
        };
        &mut self.sources[index]
    }

    fn piece(&self, id: &str, text: &str, order: i32) -> Piece {
        Piece {
            id: id.to_owned(),
            text: self.expand(text.to_owned()),
            order,
        }
    }

    /// `text` with every `{cwd}` replaced by the working directory.
    fn expand(&self, text: String) -> String {
        if text.contains("{cwd}") {
            text.replace("{cwd}", &self.cwd)
        } else {
            text
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[global_allocator]
    static GLOBAL: smith_alloc::AccountingAllocator = smith_alloc::AccountingAllocator::new();

    fn st(id: &str, text: &str, order: i32) -> PromptFragment {
        PromptFragment {
            id: id.into(),
            text: text.into(),
            order,
        }
    }

    fn dy(id: &str, text: &str, order: i32) -> Fragment {
        Fragment {
            id: id.into(),
            text: text.into(),
            order,
        }
    }

    fn ids(assembler: &Assembler) -> Vec<String> {
        assembler
            .pieces()
            .into_iter()
            .map(|p| format!("{}/{}", p.plugin, p.id))
            .collect()
    }

    #[test]
    fn pieces_go_by_order_then_load_order_then_id() {
        let mut a = Assembler::new(Path::new("/w"));
        a.add_static("smith/product", &[st("base", "Base.", 0)]);
        a.add_static("acme/late", &[st("z", "Z.", 10), st("a", "A.", 10)]);
        a.add_static("acme/early", &[st("first", "First.", -5)]);
        a.update("smith/product", Some(vec![dy("turn", "Turn.", 10)]));
        assert_eq!(
            ids(&a),
            [
                "acme/early/first",
                "smith/product/base",
                "smith/product/turn",
                "acme/late/a",
                "acme/late/z",
            ]
        );
        assert_eq!(&*a.prompt(), "First.\n\nBase.\n\nTurn.\n\nA.\n\nZ.");
        let turn = &a.pieces()[2];
        assert!(turn.dynamic);
        assert!(!a.pieces()[1].dynamic);
    }

    #[test]
    fn cwd_is_replaced_and_sizes_count_the_replaced_text() {
        let mut a = Assembler::new(Path::new("/work/p"));
        a.add_static(
            "smith/product",
            &[st("base", "You are smith. Work in {cwd} ({cwd}).", 0)],
        );
        let text = "You are smith. Work in /work/p (/work/p).";
        assert_eq!(&*a.prompt(), text);
        let piece = &a.pieces()[0];
        assert_eq!(piece.bytes, text.len());
        assert_eq!(piece.tokens, text.len().div_ceil(3));
        assert_eq!((piece.order, piece.id.as_str()), (0, "base"));
    }

    #[test]
    fn no_fragments_or_empty_ones_give_an_empty_prompt() {
        let mut a = Assembler::new(Path::new("/w"));
        assert_eq!(&*a.prompt(), "");
        a.add_static("p/x", &[st("e", "", 0)]);
        a.update("p/y", Some(vec![dy("a", "A.", 1), dy("b", "", 2)]));
        assert_eq!(&*a.prompt(), "A.");
    }

    #[test]
    fn an_unchanged_update_keeps_the_generation_and_the_prompt() {
        let mut a = Assembler::new(Path::new("/w"));
        a.add_static("smith/product", &[st("base", "Base.", 0)]);
        a.update("test/kit", Some(vec![dy("kit.turns", "Turn 1.", 5)]));
        let generation = a.generation();
        let first = a.prompt();
        a.update("test/kit", Some(vec![dy("kit.turns", "Turn 1.", 5)]));
        a.update("test/kit", None);
        a.add_static("smith/product", &[st("base", "Base.", 0)]);
        assert_eq!(a.generation(), generation);
        assert!(Arc::ptr_eq(&first, &a.prompt()));
    }

    #[test]
    fn a_changed_update_moves_the_generation_and_rebuilds() {
        let mut a = Assembler::new(Path::new("/w"));
        a.add_static("smith/product", &[st("base", "Base.", 0)]);
        a.update("test/kit", Some(vec![dy("kit.turns", "Turn 1.", 5)]));
        let generation = a.generation();
        let first = a.prompt();
        a.update("test/kit", Some(vec![dy("kit.turns", "Turn 2.", 5)]));
        assert_eq!(a.generation(), generation + 1);
        let second = a.prompt();
        assert!(!Arc::ptr_eq(&first, &second));
        assert_eq!(&*second, "Base.\n\nTurn 2.");
        a.update("test/kit", Some(Vec::new()));
        assert_eq!(a.generation(), generation + 2);
        assert_eq!(&*a.prompt(), "Base.");
    }

    #[test]
    fn a_second_prompt_call_allocates_nothing() {
        let mut a = Assembler::new(Path::new("/w"));
        for i in 0..20 {
            a.add_static(&format!("p/{i}"), &[st("f", &"x".repeat(200), i)]);
        }
        let first = a.prompt();
        assert!(smith_alloc::is_global_allocator());
        let (second, stats) = smith_alloc::count(|| a.prompt());
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(stats.allocations, 0);
        // A rebuild does allocate: the counter is live.
        a.update("p/0", Some(vec![dy("t", "turn", 0)]));
        let (_, stats) = smith_alloc::count(|| a.prompt());
        assert!(stats.allocations > 0);
    }
}
