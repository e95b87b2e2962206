//! Capability gating: a request uses only what its model advertises.
//!
//! The engine describes what a request would use as [`RequestNeeds`];
//! [`gate`] compares it with the model's capabilities and returns the needs
//! the request may actually use plus a warning for each degradation, or an
//! error before anything is sent.
//!
//! | Need | Model lacks it (or it is unknown) |
//! |---|---|
//! | image input | error `gate.images` |
//! | tools | error `gate.tools` |
//! | thinking level | dropped, or the nearest level the model offers; warning `gate.thinking` |
//! | strict tool input | dropped (tool input is validated locally); warning `gate.strict-tools` |
//! | cache breakpoints | dropped, or cut to the model's maximum; warning `gate.cache` |
//! | output tokens above the limit | cut to the limit; warning `gate.max-output` |
//! | input + output above the context | error `gate.context` |
//!
//! A capability the model's entry states is evidence and decides. Only
//! fields the entry leaves unknown may be filled from its family
//! ([`crate::Snapshot::family_of`]) — so a model named like a thinking family
//! but listed without thinking is never sent thinking.

use smith_diag::Diagnostic;

use crate::model::{CacheBehavior, Field, ModelInfo, ThinkingLevel};

/// What a normalized request would use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestNeeds {
    /// The request carries images.
    pub images: bool,
    /// The request offers tools.
    pub tools: bool,
    /// Tool input should be constrained to each tool's schema.
    pub strict_tools: bool,
    /// The thinking level asked for, if any.
    pub thinking: Option<ThinkingLevel>,
    /// Prompt-cache breakpoints the request would place.
    pub cache_breakpoints: u32,
    /// The output token budget asked for, if any.
    pub max_output: Option<u64>,
    /// An estimate of the input tokens, if known.
    pub input_tokens: Option<u64>,
}

/// The request as it may be sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Gated {
    /// The needs after degradation.
    pub needs: RequestNeeds,
    /// One warning per degradation.
    pub warnings: Vec<Diagnostic>,
}

/// The capabilities a request is judged against: the model's own stated
/// fields, with unknown fields filled from `family` when given.
pub fn effective(model: &ModelInfo, family: Option<&ModelInfo>) -> ModelInfo {
    let mut out = model.clone();
    if let Some(family) = family {
        for f in Field::ALL {
            if f.render(model).is_none() {
                f.copy(family, &mut out);
            }
        }
    }
    out
}

/// Checks `needs` against `model` (see the module table).
///
/// # Errors
///
/// A diagnostic naming the model, the capability and the fix when the
/// request cannot be sent without a behavior the model lacks.
pub fn gate(
    model: &ModelInfo,
    family: Option<&ModelInfo>,
    needs: &RequestNeeds,
) -> Result<Gated, Diagnostic> {
    let caps = effective(model, family);
    let reference = model.reference();
    let lacks = |what: &str, v: Option<bool>| -> String {
        match v {
            Some(false) => format!("`{reference}` is listed without {what}"),
            _ => format!("the catalog does not say whether `{reference}` supports {what}"),
        }
    };
    let declare = format!(
        "pick a model that supports it (`smith models`), or, if `{reference}` does support it, declare it in your models.kdl"
    );
    let mut out = needs.clone();
    let mut warnings = Vec::new();

    if needs.images && caps.image_input != Some(true) {
        return Err(Diagnostic::error(
            "gate.images",
            format!("the request carries images but `{reference}` does not take image input"),
            lacks("image input", caps.image_input),
            format!("remove the images from the conversation or {declare}"),
        )
        .with_value(&reference)
        .with_example(example(model, "input \"text\" \"image\"")));
    }
    if needs.tools && caps.tools != Some(true) {
        return Err(Diagnostic::error(
            "gate.tools",
            format!("the request offers tools but `{reference}` does not call tools"),
            lacks("tool use", caps.tools),
            format!("disable tools for this run or {declare}"),
        )
        .with_value(&reference)
        .with_example(example(model, "tools #true")));
    }
    if let Some(asked) = needs.thinking {
        let offered = caps.thinking.as_deref().unwrap_or(&[]);
        if !offered.contains(&asked) {
            let nearest = offered
                .iter()
                .rev()
                .find(|l| **l <= asked)
                .or_else(|| offered.first())
                .copied();
            out.thinking = nearest;
            let (what, why) = match nearest {
                Some(l) => (
                    format!(
                        "thinking level `{asked}` is not offered by `{reference}`; using `{l}`"
                    ),
                    format!(
                        "`{reference}` offers only {}",
                        offered
                            .iter()
                            .map(|l| l.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ),
                None => (
                    format!("thinking is off for `{reference}`"),
                    match caps.thinking {
                        Some(_) => format!("`{reference}` is listed without thinking"),
                        None => format!(
                            "the catalog does not say whether `{reference}` thinks on request"
                        ),
                    },
                ),
            };
            warnings.push(
                Diagnostic::warning(
                    "gate.thinking",
                    what,
                    why,
                    "choose an offered level, or a thinking model, to silence this",
                )
                .with_value(asked),
            );
        }
    }
    if needs.strict_tools && needs.tools && caps.strict_tools != Some(true) {
        out.strict_tools = false;
        warnings.push(Diagnostic::warning(
            "gate.strict-tools",
            format!("tool input for `{reference}` is not constrained to the tool schemas"),
            lacks("strict tool input", caps.strict_tools),
            "nothing to do: tool input is validated against each schema before a tool runs",
        ));
    }
    if needs.cache_breakpoints > 0 {
        let allowed = match caps.cache {
            Some(CacheBehavior::Explicit { max_breakpoints }) => max_breakpoints,
            _ => 0,
        };
        if needs.cache_breakpoints > allowed {
            out.cache_breakpoints = allowed;
            let why = match caps.cache {
                Some(CacheBehavior::Explicit { .. }) => {
                    format!("`{reference}` accepts at most {allowed} breakpoints")
                }
                Some(CacheBehavior::Automatic) => {
                    format!("`{reference}` caches automatically and takes no breakpoints")
                }
                Some(CacheBehavior::None) => format!("`{reference}` does not cache prompts"),
                None => format!("the catalog does not say how `{reference}` caches"),
            };
            warnings.push(
                Diagnostic::warning(
                    "gate.cache",
                    format!(
                        "{} of {} cache breakpoints dropped for `{reference}`",
                        needs.cache_breakpoints - allowed,
                        needs.cache_breakpoints
                    ),
                    why,
                    "nothing to do; requests cost more without the cache",
                )
                .with_value(needs.cache_breakpoints),
            );
        }
    }
    if let (Some(asked), Some(limit)) = (needs.max_output, caps.max_output)
        && asked > limit
    {
        out.max_output = Some(limit);
        warnings.push(
            Diagnostic::warning(
                "gate.max-output",
                format!("output budget cut from {asked} to {limit} tokens for `{reference}`"),
                format!("`{reference}` produces at most {limit} tokens per response"),
                "lower the output budget to silence this",
            )
            .with_value(asked),
        );
    }
    if let (Some(input), Some(context)) = (needs.input_tokens, caps.context) {
        let output = out.max_output.unwrap_or(0);
        if input.saturating_add(output) > context {
            return Err(Diagnostic::error(
                "gate.context",
                format!(
                    "the request needs {input} input + {output} output tokens, more than the {context}-token context of `{reference}`"
                ),
                "the provider would reject the request",
                "compact the session, lower the output budget, or pick a model with a larger context",
            )
            .with_value(input));
        }
    }
    Ok(Gated {
        needs: out,
        warnings,
    })
}

fn example(model: &ModelInfo, line: &str) -> String {
    format!(
        "provider \"{}\" {{\n    model \"{}\" {{\n        {line}\n    }}\n}}",
        model.provider, model.id
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> ModelInfo {
        let mut m = ModelInfo::new("p", "m");
        m.image_input = Some(false);
        m.tools = Some(true);
        m.thinking = Some(vec![ThinkingLevel::Low, ThinkingLevel::High]);
        m.strict_tools = Some(false);
        m.cache = Some(CacheBehavior::Explicit { max_breakpoints: 2 });
        m.max_output = Some(100);
        m.context = Some(1000);
        m
    }

    #[test]
    fn a_request_within_the_capabilities_passes_unchanged() {
        let needs = RequestNeeds {
            tools: true,
            thinking: Some(ThinkingLevel::High),
            cache_breakpoints: 2,
            max_output: Some(50),
            input_tokens: Some(900),
            ..RequestNeeds::default()
        };
        let g = gate(&model(), None, &needs).unwrap();
        assert_eq!(g.needs, needs);
        assert!(g.warnings.is_empty());
    }

    #[test]
    fn images_to_a_text_model_fail_before_dispatch() {
        let needs = RequestNeeds {
            images: true,
            ..RequestNeeds::default()
        };
        let d = gate(&model(), None, &needs).unwrap_err();
        assert_eq!(d.code(), "gate.images");
        assert!(d.what().contains("p/m"));
        assert!(d.is_complete());
    }

    #[test]
    fn unknown_tool_support_fails_rather_than_guessing() {
        let m = ModelInfo::new("p", "x");
        let needs = RequestNeeds {
            tools: true,
            ..RequestNeeds::default()
        };
        let d = gate(&m, None, &needs).unwrap_err();
        assert_eq!(d.code(), "gate.tools");
        assert!(d.why().contains("does not say"));
    }

    #[test]
    fn an_unoffered_thinking_level_falls_to_the_nearest_lower_one() {
        let needs = RequestNeeds {
            thinking: Some(ThinkingLevel::Medium),
            ..RequestNeeds::default()
        };
        let g = gate(&model(), None, &needs).unwrap();
        assert_eq!(g.needs.thinking, Some(ThinkingLevel::Low));
        assert_eq!(g.warnings[0].code(), "gate.thinking");
        let needs = RequestNeeds {
            thinking: Some(ThinkingLevel::Minimal),
            ..RequestNeeds::default()
        };
        let g = gate(&model(), None, &needs).unwrap();
        assert_eq!(g.needs.thinking, Some(ThinkingLevel::Low));
    }

    #[test]
    fn explicit_no_thinking_beats_a_thinking_family() {
        let mut thinker = ModelInfo::new("p", "deep-think-2");
        thinker.thinking = Some(vec![ThinkingLevel::High]);
        let mut plain = ModelInfo::new("p", "deep-think-2-lite");
        plain.thinking = Some(vec![]);
        let needs = RequestNeeds {
            thinking: Some(ThinkingLevel::High),
            ..RequestNeeds::default()
        };
        let g = gate(&plain, Some(&thinker), &needs).unwrap();
        assert_eq!(g.needs.thinking, None);
        assert_eq!(g.warnings[0].code(), "gate.thinking");
        assert!(g.warnings[0].why().contains("listed without thinking"));
        // Where the model says nothing, the family fills in.
        let unknown = ModelInfo::new("p", "deep-think-2-preview");
        let g = gate(&unknown, Some(&thinker), &needs).unwrap();
        assert_eq!(g.needs.thinking, Some(ThinkingLevel::High));
        assert!(g.warnings.is_empty());
    }

    #[test]
    fn strict_tools_degrade_to_plain_tools() {
        let needs = RequestNeeds {
            tools: true,
            strict_tools: true,
            ..RequestNeeds::default()
        };
        let g = gate(&model(), None, &needs).unwrap();
        assert!(!g.needs.strict_tools);
        assert!(g.needs.tools);
        assert_eq!(g.warnings[0].code(), "gate.strict-tools");
    }

    #[test]
    fn cache_breakpoints_are_cut_to_the_model_maximum_or_dropped() {
        let needs = RequestNeeds {
            cache_breakpoints: 4,
            ..RequestNeeds::default()
        };
        let g = gate(&model(), None, &needs).unwrap();
        assert_eq!(g.needs.cache_breakpoints, 2);
        let mut auto = model();
        auto.cache = Some(CacheBehavior::Automatic);
        let g = gate(&auto, None, &needs).unwrap();
        assert_eq!(g.needs.cache_breakpoints, 0);
        assert_eq!(g.warnings[0].code(), "gate.cache");
    }

    #[test]
    fn output_is_cut_and_context_overflow_fails() {
        let needs = RequestNeeds {
            max_output: Some(500),
            ..RequestNeeds::default()
        };
        let g = gate(&model(), None, &needs).unwrap();
        assert_eq!(g.needs.max_output, Some(100));
        let needs = RequestNeeds {
            max_output: Some(500),
            input_tokens: Some(950),
            ..RequestNeeds::default()
        };
        assert_eq!(
            gate(&model(), None, &needs).unwrap_err().code(),
            "gate.context"
        );
    }
}
