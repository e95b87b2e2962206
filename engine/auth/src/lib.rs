//! Credential mechanics: sources, the locked auth store, resolution before dispatch, renewal.
#![deny(missing_docs)]
