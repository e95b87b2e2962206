//! Subcommands. One module per command; each exposes `Args` and `run`.
