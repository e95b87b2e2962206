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
//! not say) is not a refusal: the image is sent and the result's details
//! carry a warning. Local and custom models often have no catalog data, and
//! a vendor that cannot read an image answers with a clear error; refusing
//! would block exactly the models the catalog knows least.

use std::sync::{Arc, RwLock};

use smith_contract::MediaType;

/// What the active model takes, and where that knowledge came from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MediaSupport {
    /// The model, as `provider/model` (for messages).
    pub model: String,
    /// Whether the model reads images: `None` when its catalog entry does
    /// not say.
    pub images: Option<bool>,
    /// Where `images` came from (`the catalog entry of anthropic/...`).
    pub source: String,
    /// Whether the provider sends PDFs to this model as documents.
    pub pdf: bool,
    /// Whether the provider encodes media at all; without it every media
    /// part is refused.
    pub encoder: bool,
}

impl MediaSupport {
    /// Why `media_type` cannot go to the model, or `None` when it can (or
    /// may: unknown image support is not a refusal). The text names the
    /// model and where its capability came from.
    pub fn refusal(&self, media_type: MediaType) -> Option<String> {
        let model = if self.model.is_empty() {
            "the active model"
        } else {
            &self.model
        };
        if !self.encoder {
            return Some(format!(
                "no media encoder is set up for {model} (its provider cannot be sent images or documents)"
            ));
        }
        if media_type.is_image() && self.images == Some(false) {
            return Some(format!(
                "{model} does not take image input ({})",
                if self.source.is_empty() {
                    "its catalog entry says so"
                } else {
                    &self.source
                }
            ));
        }
        None
    }
}

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
