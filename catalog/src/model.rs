//! The model vocabulary: what a model is known to support.
//!
//! Every capability is an `Option`: `None` means *unknown* (nobody stated
//! it), never "no" and never zero. `Some(false)`, an empty thinking list and
//! [`CacheBehavior::None`] are explicit statements that the model lacks the
//! behavior.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One level of model thinking (reasoning effort), from least to most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    /// The smallest amount of reasoning the model offers.
    Minimal,
    /// Low effort.
    Low,
    /// Medium effort.
    Medium,
    /// High effort.
    High,
    /// The most the model offers.
    Max,
}

impl ThinkingLevel {
    /// Every level, in ascending order.
    pub const ALL: [ThinkingLevel; 5] = [
        ThinkingLevel::Minimal,
        ThinkingLevel::Low,
        ThinkingLevel::Medium,
        ThinkingLevel::High,
        ThinkingLevel::Max,
    ];

    /// The level's name as written in catalogs and options.
    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
            ThinkingLevel::Max => "max",
        }
    }

    /// Parses a level name; `None` for anything else.
    pub fn parse(name: &str) -> Option<ThinkingLevel> {
        ThinkingLevel::ALL.into_iter().find(|l| l.as_str() == name)
    }
}

impl fmt::Display for ThinkingLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a model caches prompt prefixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum CacheBehavior {
    /// No prompt caching.
    None,
    /// The provider caches prefixes by itself; requests cannot place
    /// breakpoints.
    Automatic,
    /// Requests mark cache breakpoints explicitly, at most `max_breakpoints`.
    Explicit {
        /// The most breakpoints one request may carry.
        max_breakpoints: u32,
    },
}

impl fmt::Display for CacheBehavior {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CacheBehavior::None => f.write_str("none"),
            CacheBehavior::Automatic => f.write_str("automatic"),
            CacheBehavior::Explicit { max_breakpoints } => {
                write!(f, "explicit ({max_breakpoints} breakpoints)")
            }
        }
    }
}

/// Prices in US dollars per million tokens. Each is unknown until stated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Pricing {
    /// Uncached input tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<f64>,
    /// Output tokens (thinking included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<f64>,
    /// Input tokens read from the prompt cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    /// Input tokens written to the prompt cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

/// What is known about one model. Fields other than the identity are
/// `None` when unknown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The provider that serves the model, e.g. `anthropic`.
    pub provider: String,
    /// The model id the provider accepts on the wire.
    pub id: String,
    /// A name for people.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The context window in tokens (input and output together).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<u64>,
    /// The most output tokens one response may hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output: Option<u64>,
    /// Whether the model reads text input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_input: Option<bool>,
    /// Whether the model reads image input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_input: Option<bool>,
    /// Whether the model calls tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<bool>,
    /// The thinking levels the model accepts; `Some(vec![])` states that it
    /// does not think on request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Vec<ThinkingLevel>>,
    /// Whether tool input can be constrained to the tool's schema (strict or
    /// grammar-constrained decoding).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strict_tools: Option<bool>,
    /// How the model caches prompts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheBehavior>,
    /// Prices per million tokens.
    #[serde(default, skip_serializing_if = "pricing_is_unknown")]
    pub pricing: Pricing,
}

fn pricing_is_unknown(p: &Pricing) -> bool {
    *p == Pricing::default()
}

impl ModelInfo {
    /// A model with only its identity known.
    pub fn new(provider: impl Into<String>, id: impl Into<String>) -> ModelInfo {
        ModelInfo {
            provider: provider.into(),
            id: id.into(),
            name: None,
            context: None,
            max_output: None,
            text_input: None,
            image_input: None,
            tools: None,
            thinking: None,
            strict_tools: None,
            cache: None,
            pricing: Pricing::default(),
        }
    }

    /// `provider/id`, the model's full reference.
    pub fn reference(&self) -> String {
        format!("{}/{}", self.provider, self.id)
    }

    /// Each stated field as `(name, rendered value)`, in schema order.
    /// Used for provenance and conflict reports.
    pub fn stated_fields(&self) -> Vec<(Field, String)> {
        Field::ALL
            .into_iter()
            .filter_map(|f| f.render(self).map(|v| (f, v)))
            .collect()
    }
}

/// One field of [`ModelInfo`] that a source may state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Field {
    /// [`ModelInfo::name`].
    Name,
    /// [`ModelInfo::context`].
    Context,
    /// [`ModelInfo::max_output`].
    MaxOutput,
    /// [`ModelInfo::text_input`].
    TextInput,
    /// [`ModelInfo::image_input`].
    ImageInput,
    /// [`ModelInfo::tools`].
    Tools,
    /// [`ModelInfo::thinking`].
    Thinking,
    /// [`ModelInfo::strict_tools`].
    StrictTools,
    /// [`ModelInfo::cache`].
    Cache,
    /// [`Pricing::input`].
    PriceInput,
    /// [`Pricing::output`].
    PriceOutput,
    /// [`Pricing::cache_read`].
    PriceCacheRead,
    /// [`Pricing::cache_write`].
    PriceCacheWrite,
}

impl Field {
    /// Every field, in schema order.
    pub const ALL: [Field; 13] = [
        Field::Name,
        Field::Context,
        Field::MaxOutput,
        Field::TextInput,
        Field::ImageInput,
        Field::Tools,
        Field::Thinking,
        Field::StrictTools,
        Field::Cache,
        Field::PriceInput,
        Field::PriceOutput,
        Field::PriceCacheRead,
        Field::PriceCacheWrite,
    ];

    /// The field's name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Field::Name => "name",
            Field::Context => "context",
            Field::MaxOutput => "max-output",
            Field::TextInput => "text-input",
            Field::ImageInput => "image-input",
            Field::Tools => "tools",
            Field::Thinking => "thinking",
            Field::StrictTools => "strict-tools",
            Field::Cache => "cache",
            Field::PriceInput => "price.input",
            Field::PriceOutput => "price.output",
            Field::PriceCacheRead => "price.cache-read",
            Field::PriceCacheWrite => "price.cache-write",
        }
    }

    /// The field's value in `m` rendered for people, `None` when unknown.
    pub fn render(self, m: &ModelInfo) -> Option<String> {
        fn b(v: Option<bool>) -> Option<String> {
            v.map(|v| if v { "yes" } else { "no" }.to_owned())
        }
        match self {
            Field::Name => m.name.clone(),
            Field::Context => m.context.map(|v| v.to_string()),
            Field::MaxOutput => m.max_output.map(|v| v.to_string()),
            Field::TextInput => b(m.text_input),
            Field::ImageInput => b(m.image_input),
            Field::Tools => b(m.tools),
            Field::Thinking => m.thinking.as_ref().map(|levels| {
                if levels.is_empty() {
                    "none".to_owned()
                } else {
                    levels
                        .iter()
                        .map(|l| l.as_str())
                        .collect::<Vec<_>>()
                        .join(" ")
                }
            }),
            Field::StrictTools => b(m.strict_tools),
            Field::Cache => m.cache.map(|c| c.to_string()),
            Field::PriceInput => m.pricing.input.map(|p| format!("{p}")),
            Field::PriceOutput => m.pricing.output.map(|p| format!("{p}")),
            Field::PriceCacheRead => m.pricing.cache_read.map(|p| format!("{p}")),
            Field::PriceCacheWrite => m.pricing.cache_write.map(|p| format!("{p}")),
        }
    }

    /// Copies this field from `from` into `into` when `from` states it.
    pub fn copy(self, from: &ModelInfo, into: &mut ModelInfo) {
        fn set<T: Clone>(src: &Option<T>, dst: &mut Option<T>) {
            if src.is_some() {
                dst.clone_from(src);
            }
        }
        match self {
            Field::Name => set(&from.name, &mut into.name),
            Field::Context => set(&from.context, &mut into.context),
            Field::MaxOutput => set(&from.max_output, &mut into.max_output),
            Field::TextInput => set(&from.text_input, &mut into.text_input),
            Field::ImageInput => set(&from.image_input, &mut into.image_input),
            Field::Tools => set(&from.tools, &mut into.tools),
            Field::Thinking => set(&from.thinking, &mut into.thinking),
            Field::StrictTools => set(&from.strict_tools, &mut into.strict_tools),
            Field::Cache => set(&from.cache, &mut into.cache),
            Field::PriceInput => set(&from.pricing.input, &mut into.pricing.input),
            Field::PriceOutput => set(&from.pricing.output, &mut into.pricing.output),
            Field::PriceCacheRead => set(&from.pricing.cache_read, &mut into.pricing.cache_read),
            Field::PriceCacheWrite => {
                set(&from.pricing.cache_write, &mut into.pricing.cache_write);
            }
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_model_states_nothing() {
        let m = ModelInfo::new("p", "m");
        assert!(m.stated_fields().is_empty());
        assert_eq!(m.reference(), "p/m");
    }

    #[test]
    fn explicit_no_thinking_is_stated_and_rendered_as_none() {
        let mut m = ModelInfo::new("p", "m");
        m.thinking = Some(vec![]);
        assert_eq!(
            m.stated_fields(),
            vec![(Field::Thinking, "none".to_owned())]
        );
    }

    #[test]
    fn levels_parse_back_from_their_names() {
        for l in ThinkingLevel::ALL {
            assert_eq!(ThinkingLevel::parse(l.as_str()), Some(l));
        }
        assert_eq!(ThinkingLevel::parse("ultra"), None);
    }

    #[test]
    fn copy_moves_only_stated_fields() {
        let mut from = ModelInfo::new("p", "m");
        from.context = Some(10);
        let mut into = ModelInfo::new("p", "m");
        into.max_output = Some(5);
        for f in Field::ALL {
            f.copy(&from, &mut into);
        }
        assert_eq!(into.context, Some(10));
        assert_eq!(into.max_output, Some(5));
    }
}
