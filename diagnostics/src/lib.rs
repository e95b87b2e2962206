//! Diagnostics: what happened, why, and what to do next, rendered for terminals, JSON surfaces and plugins.
#![deny(missing_docs)]
