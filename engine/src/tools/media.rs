//! What media the active model takes, shared by the runtime and the tools
//! that hand the model images and documents (`read`).
//!
//! The runtime (or its host) sets a [`MediaSupport`] in the [`MediaCell`]
//! whenever the provider or model changes; `read` asks it before attaching
//! an image or a PDF. A context without a cell, or with a cell nothing was
//! set in, behaves as [`MediaSupport::default`]: no media encoder, so
//! `read` refuses images and documents with what/why/next rather than
//! attach what the provider would have to refuse.
//!
//! Unknown image input (`images: None`, a model whose catalog entry does
//! not say) is refused like a model without it, with the fix (declare the
//! input in models.kdl): the request gate refuses a request carrying images
//! to such a model, so an attached image would stop the conversation at
//! the next request instead.

use std::sync::{Arc, RwLock};

pub use smith_contract::media::MediaSupport;

/// The shared, changeable [`MediaSupport`] of a runtime.
#[derive(Clone, Debug, Default)]
pub struct MediaCell(Arc<RwLock<Option<MediaSupport>>>);

impl MediaCell {
    /// A cell holding `support`.
    pub fn new(support: MediaSupport) -> Self {
        MediaCell(Arc::new(RwLock::new(Some(support))))
    }

    /// Replaces what the model takes (after a model change).
    pub fn set(&self, support: MediaSupport) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = Some(support);
    }

    /// What the model takes; [`MediaSupport::default`] (no encoder) when
    /// nothing was set.
    pub fn get(&self) -> MediaSupport {
        self.0
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_default()
    }
}
