//! Release verification and self-update.
//!
//! # Overview
//!
//! A release is a folder of files at `BASE/VERSION/` (BASE is the
//! `update.url` option) and a pointer `BASE/latest` holding the newest
//! version:
//!
//! - `smith-VERSION-TARGET.tar.gz`: the stripped binary, as
//!   `smith-VERSION-TARGET/smith`;
//! - `smith-VERSION-TARGET-debug.tar.gz`: its split debug information;
//! - `SHA256SUMS`: one `HEX  NAME` line per archive (`sha256sum`'s format);
//! - `SHA256SUMS.sig`: an ed25519 signature over the exact bytes of
//!   `SHA256SUMS`, in hex.
//!
//! [`keys`] holds the key formats, the public key compiled into smith and
//! signing; [`sums`] parses and checks `SHA256SUMS`; [`release`] names the
//! files and compares versions; [`fetch`] downloads through the host's HTTP
//! engine; [`archive`] takes the binary out of an archive; [`install`]
//! decides whether the running binary is smith's to replace and replaces it
//! with an atomic rename, keeping the previous one for a rollback.
//!
//! Every failure is a [`smith_diag::Diagnostic`] naming the URL or file,
//! why it matters and what to do next.
#![deny(missing_docs)]

pub mod archive;
pub mod fetch;
pub mod hex;
pub mod install;
pub mod keys;
pub mod release;
pub mod sums;
