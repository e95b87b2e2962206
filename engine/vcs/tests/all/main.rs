//! Integration tests for smith-vcs: snapshots, diffs, restores, undo and
//! redo give byte-identical trees; conflicts and invalid targets change
//! nothing; an unchanged tree's snapshot allocates a constant number of
//! times; no external program runs.

mod alloc_count;
mod export;
mod fixtures;
mod no_git;
mod operations;
mod validation;
