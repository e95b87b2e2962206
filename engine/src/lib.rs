//! The agent runtime: protocol, loop, queues, built-in tools, effect journal.
#![deny(missing_docs)]
