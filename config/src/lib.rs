//! Configuration in KDL: option declarations, precedence, sources, project trust.
#![deny(missing_docs)]
