//! The agent runtime: protocol, loop, queues, built-in tools, effect journal.
#![deny(missing_docs)]

pub mod tools;
pub mod agent;
pub mod journal;
pub mod protocol;
pub mod provider;
