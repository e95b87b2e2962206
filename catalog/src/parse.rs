//! The human-readable catalog format (KDL) and its validation.
//!
//! ```kdl
//! provider "anthropic" {
//!     model "claude-haiku-4-5-20251001" {
//!         name "Claude Haiku 4.5"
//!         context 200000
//!         max-output 64000
//!         input "text" "image"
//!         tools #true
//!         thinking "low" "medium" "high"
//!         strict-tools #false
//!         cache "explicit" breakpoints=4
//!         price input=1.0 output=5.0 cache-read=0.1 cache-write=1.25
//!     }
//! }
//! ```
//!
//! A field that is left out is unknown. `thinking` with no levels states
//! that the model does not think on request; `cache "none"` that it does not
//! cache. Unknown node names, duplicate fields, duplicate models, values of
//! the wrong type, non-positive limits, an output limit above the context
//! window and negative or non-finite prices are rejected with a diagnostic
//! naming the file, line and column.

use std::collections::HashSet;
use std::path::Path;

use kdl::{KdlDocument, KdlEntry, KdlNode, KdlValue};
use smith_diag::{Diagnostic, LineCol, Surface};

use crate::model::{CacheBehavior, ModelInfo, ThinkingLevel};
use crate::route::Routes;

const EXAMPLE: &str = "provider \"example\" {\n    model \"example-1\" {\n        context 200000\n        max-output 8192\n        tools #true\n        price input=1.0 output=5.0\n    }\n}";

/// Parses and validates catalog text. `origin` names where the text came
/// from (for diagnostics).
///
/// # Errors
///
/// The first problem found, as a diagnostic with the position in `origin`.
pub fn parse_catalog(text: &str, origin: &Path) -> Result<Vec<ModelInfo>, Diagnostic> {
    parse_document(text, origin, false).map(|(models, _)| models)
}

/// Parses a user's `models.kdl`: model entries as in [`parse_catalog`]
/// (partial entries allowed) plus routing definitions:
///
/// ```kdl
/// alias "fast" "anthropic/claude-haiku-4-5-20251001"
/// group "main" "anthropic/claude-sonnet-4-5-20250929@work" "openai/gpt-5"
/// bucket "work" provider="anthropic" slot="work"
/// ```
///
/// # Errors
///
/// The first problem found, as for [`parse_catalog`]; a name defined twice
/// as the same kind is an error too.
pub fn parse_user_file(text: &str, origin: &Path) -> Result<(Vec<ModelInfo>, Routes), Diagnostic> {
    parse_document(text, origin, true)
}

fn parse_document(
    text: &str,
    origin: &Path,
    allow_routes: bool,
) -> Result<(Vec<ModelInfo>, Routes), Diagnostic> {
    let p = Parser { text, origin };
    // The KDL parser descends once per level of blocks: a file nested
    // deeply enough would exhaust the stack, so it is refused first.
    smith_config::nesting::check(text).map_err(|deep| {
        p.error(
            deep.offset,
            "catalog.too-deep",
            format!(
                "{} nests blocks deeper than {} levels at line {}",
                origin.display(),
                smith_config::nesting::MAX_DEPTH,
                deep.line
            ),
            format!(
                "smith refuses a model catalog nested deeper than {} levels before parsing it, so a hostile file cannot exhaust the stack; a catalog needs three levels (provider, model, fields)",
                smith_config::nesting::MAX_DEPTH
            ),
            "flatten the blocks from the line shown, or remove the file if you did not write it",
        )
    })?;
    let doc = KdlDocument::parse(text).map_err(|err| {
        let first = err.diagnostics.first();
        let offset = first.map_or(0, |d| d.span.offset());
        let message = first
            .and_then(|d| d.message.clone())
            .unwrap_or_else(|| "the text is not valid KDL".to_owned());
        p.error(
            offset,
            "catalog.parse",
            format!("{} is not valid KDL", origin.display()),
            format!("KDL syntax error: {message}"),
            "fix the syntax at the position shown",
        )
    })?;
    let mut models = Vec::new();
    let mut seen = HashSet::new();
    let mut routes = Routes::new();
    let mut route_names = HashSet::new();
    for node in doc.nodes() {
        let kind = node.name().value();
        if allow_routes && matches!(kind, "alias" | "group" | "bucket") {
            routes = p.route(node, routes, &mut route_names)?;
            continue;
        }
        if kind != "provider" {
            let expected = if allow_routes {
                "provider, alias, group or bucket"
            } else {
                "provider"
            };
            return Err(p.unknown_node(node, "top level", expected));
        }
        let provider = p.single_string(node, "provider")?;
        p.check_id(node, &provider, "provider")?;
        let Some(children) = node.children() else {
            return Err(p.error(
                node.span().offset(),
                "catalog.invalid",
                format!("provider `{provider}` has no block of models"),
                "a provider node holds its models in braces",
                "add `{ model \"ID\" { ... } }` after the provider name",
            ));
        };
        for m in children.nodes() {
            if m.name().value() != "model" {
                return Err(p.unknown_node(m, "a provider block", "model"));
            }
            let model = p.model(&provider, m)?;
            if !seen.insert((model.provider.clone(), model.id.clone())) {
                return Err(p.error(
                    m.span().offset(),
                    "catalog.duplicate-model",
                    format!("model `{}` is listed twice", model.reference()),
                    "two entries for one model leave it unclear which is meant",
                    "delete one of the two entries",
                ));
            }
            models.push(model);
        }
    }
    Ok((models, routes))
}

/// Writes `models` in the catalog format, grouped by provider in order of
/// first appearance. [`parse_catalog`] reads the text back to the same
/// models.
pub fn render_catalog(models: &[ModelInfo]) -> String {
    use std::fmt::Write as _;
    let mut providers: Vec<&str> = Vec::new();
    for m in models {
        if !providers.contains(&m.provider.as_str()) {
            providers.push(&m.provider);
        }
    }
    let mut out = String::new();
    for p in providers {
        let _ = writeln!(out, "provider {} {{", quote(p));
        for m in models.iter().filter(|m| m.provider == p) {
            let _ = writeln!(out, "    model {} {{", quote(&m.id));
            let mut line = |s: String| {
                let _ = writeln!(out, "        {s}");
            };
            if let Some(n) = &m.name {
                line(format!("name {}", quote(n)));
            }
            if let Some(c) = m.context {
                line(format!("context {c}"));
            }
            if let Some(c) = m.max_output {
                line(format!("max-output {c}"));
            }
            if m.text_input.is_some() || m.image_input.is_some() {
                let mut kinds = String::from("input");
                if m.text_input == Some(true) {
                    kinds.push_str(" \"text\"");
                }
                if m.image_input == Some(true) {
                    kinds.push_str(" \"image\"");
                }
                line(kinds);
            }
            if let Some(t) = m.tools {
                line(format!("tools #{t}"));
            }
            if let Some(levels) = &m.thinking {
                let mut l = String::from("thinking");
                for level in levels {
                    let _ = write!(l, " \"{level}\"");
                }
                line(l);
            }
            if let Some(t) = m.strict_tools {
                line(format!("strict-tools #{t}"));
            }
            match m.cache {
                Some(CacheBehavior::None) => line("cache \"none\"".to_owned()),
                Some(CacheBehavior::Automatic) => line("cache \"automatic\"".to_owned()),
                Some(CacheBehavior::Explicit { max_breakpoints }) => {
                    line(format!("cache \"explicit\" breakpoints={max_breakpoints}"));
                }
                None => {}
            }
            let prices = [
                ("input", m.pricing.input),
                ("output", m.pricing.output),
                ("cache-read", m.pricing.cache_read),
                ("cache-write", m.pricing.cache_write),
            ];
            let stated: Vec<String> = prices
                .iter()
                .filter_map(|(k, v)| v.map(|v| format!("{k}={v:?}")))
                .collect();
            if !stated.is_empty() {
                line(format!("price {}", stated.join(" ")));
            }
            let _ = writeln!(out, "    }}");
        }
        let _ = writeln!(out, "}}");
    }
    out
}

fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

struct Parser<'a> {
    text: &'a str,
    origin: &'a Path,
}

impl Parser<'_> {
    fn route(
        &self,
        node: &KdlNode,
        routes: Routes,
        names: &mut HashSet<(String, String)>,
    ) -> Result<Routes, Diagnostic> {
        let kind = node.name().value();
        let mut positional = Vec::new();
        let mut props = Vec::new();
        for e in node.entries() {
            let KdlValue::String(v) = e.value() else {
                return Err(self.error(
                    e.span().offset(),
                    "catalog.invalid-route",
                    format!("`{kind}` takes quoted names, not {}", e.value()),
                    "names and model references are strings",
                    "quote each value",
                ));
            };
            match e.name() {
                Some(n) => props.push((n.value().to_owned(), v.clone())),
                None => positional.push(v.clone()),
            }
        }
        let shape = |why: &str, example: &str| {
            self.error(
                node.span().offset(),
                "catalog.invalid-route",
                format!(
                    "`{kind}` is written the wrong way in {}",
                    self.origin.display()
                ),
                why.to_owned(),
                format!("write it as `{example}`"),
            )
        };
        let name = positional.first().cloned().unwrap_or_default();
        if name.is_empty() || name.contains('/') || name.contains('@') {
            return Err(shape(
                "it needs a name first, without `/` or `@` (those mark model references)",
                "alias \"fast\" \"provider/model\"",
            ));
        }
        if !names.insert((kind.to_owned(), name.clone())) {
            return Err(self
                .error(
                    node.span().offset(),
                    "catalog.duplicate-route",
                    format!("{kind} `{name}` is defined twice"),
                    "two definitions leave it unclear which is meant",
                    "delete one of them",
                )
                .with_value(&name));
        }
        match kind {
            "alias" => match (positional.as_slice(), props.as_slice()) {
                ([_, target], []) => Ok(routes.alias(name, target.clone())),
                _ => Err(shape(
                    "an alias is a name and exactly one target",
                    "alias \"fast\" \"provider/model\"",
                )),
            },
            "group" => match (positional.as_slice(), props.as_slice()) {
                ([_, members @ ..], []) if !members.is_empty() => {
                    Ok(routes.group(name, members.iter().cloned()))
                }
                _ => Err(shape(
                    "a group is a name and one or more members, in failover order",
                    "group \"main\" \"a/m1\" \"b/m2\"",
                )),
            },
            _ => {
                let get = |k: &str| props.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
                match (positional.len(), get("provider"), get("slot"), props.len()) {
                    (1, Some(provider), Some(slot), 2) => Ok(routes.bucket(name, provider, slot)),
                    _ => Err(shape(
                        "a bucket is a name with provider= and slot= (the credential slot it uses)",
                        "bucket \"work\" provider=\"anthropic\" slot=\"work\"",
                    )),
                }
            }
        }
    }

    fn error(
        &self,
        offset: usize,
        code: &str,
        what: String,
        why: impl Into<String>,
        next: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic::error(code, what, why, next)
            .with_surface(Surface::File {
                path: self.origin.to_path_buf(),
                at: Some(LineCol::from_offset(self.text, offset)),
            })
            .with_example(EXAMPLE)
    }

    fn unknown_node(&self, node: &KdlNode, place: &str, expected: &str) -> Diagnostic {
        self.error(
            node.span().offset(),
            "catalog.unknown-node",
            format!(
                "unknown node `{}` in {place} of {}",
                node.name().value(),
                self.origin.display()
            ),
            format!("only `{expected}` is allowed there"),
            format!("rename it to `{expected}` or delete it"),
        )
        .with_value(node.name().value())
    }

    fn single_string(&self, node: &KdlNode, what: &str) -> Result<String, Diagnostic> {
        match node.entries() {
            [e] if e.name().is_none() => match e.value() {
                KdlValue::String(s) => Ok(s.clone()),
                other => Err(self.error(
                    e.span().offset(),
                    "catalog.invalid",
                    format!("`{what}` takes a string, not {other}"),
                    format!("`{what}` names something, so it is written in quotes"),
                    format!("write `{what} \"name\"`"),
                )),
            },
            entries => Err(self.error(
                node.span().offset(),
                "catalog.invalid",
                format!(
                    "`{what}` takes exactly one value, and {} were given",
                    entries.len()
                ),
                "each node states one thing",
                format!("write `{what} \"value\"`"),
            )),
        }
    }

    /// A provider id: non-empty, no whitespace, no `/` (the first `/` of a
    /// reference ends the provider id). A model id may hold `/` after its
    /// first character (`openai/gpt-oss-120b` on an OpenAI-compatible
    /// server, `meta-llama/Llama-3.3-70B-Instruct` on Together): the
    /// reference `provider/model` splits at its first `/`, so the rest is
    /// the model id whatever it holds.
    fn check_id(&self, node: &KdlNode, id: &str, what: &str) -> Result<(), Diagnostic> {
        let model = what == "model";
        let bad = id.is_empty()
            || id.chars().any(char::is_whitespace)
            || if model {
                id.starts_with('/') || id.ends_with('/')
            } else {
                id.contains('/')
            };
        if bad {
            return Err(self
                .error(
                    node.span().offset(),
                    "catalog.invalid-id",
                    format!("{what} id `{id}` is not usable"),
                    if model {
                        "model ids are non-empty, contain no whitespace, and neither start nor end with `/`"
                    } else {
                        "provider ids are non-empty and contain neither whitespace nor `/` (it separates provider and model)"
                    },
                    "use the id exactly as the provider's API accepts it",
                )
                .with_value(id));
        }
        Ok(())
    }

    fn model(&self, provider: &str, node: &KdlNode) -> Result<ModelInfo, Diagnostic> {
        let id = self.single_string(node, "model")?;
        self.check_id(node, &id, "model")?;
        let mut m = ModelInfo::new(provider, id);
        let reference = m.reference();
        let mut fields = HashSet::new();
        for f in node.children().map_or(&[][..], KdlDocument::nodes) {
            let name = f.name().value();
            if !fields.insert(name.to_owned()) {
                return Err(self.error(
                    f.span().offset(),
                    "catalog.duplicate-field",
                    format!("`{name}` is stated twice for `{reference}`"),
                    "two values for one field leave it unclear which is meant",
                    "delete one of them",
                ));
            }
            match name {
                "name" => m.name = Some(self.single_string(f, "name")?),
                "context" => m.context = Some(self.positive(f, &reference)?),
                "max-output" => m.max_output = Some(self.positive(f, &reference)?),
                "input" => {
                    let kinds = self.strings(f)?;
                    for (k, e) in &kinds {
                        if *k != "text" && *k != "image" {
                            return Err(self
                                .error(
                                    e.span().offset(),
                                    "catalog.invalid",
                                    format!("unknown input kind `{k}` for `{reference}`"),
                                    "the input kinds are `text` and `image`",
                                    "list the kinds the model reads, e.g. `input \"text\" \"image\"`",
                                )
                                .with_value(k));
                        }
                    }
                    m.text_input = Some(kinds.iter().any(|(k, _)| *k == "text"));
                    m.image_input = Some(kinds.iter().any(|(k, _)| *k == "image"));
                }
                "tools" => m.tools = Some(self.boolean(f, &reference)?),
                "strict-tools" => m.strict_tools = Some(self.boolean(f, &reference)?),
                "thinking" => {
                    let mut levels = Vec::new();
                    for (k, e) in self.strings(f)? {
                        let Some(level) = ThinkingLevel::parse(k) else {
                            return Err(self
                                .error(
                                    e.span().offset(),
                                    "catalog.invalid",
                                    format!("unknown thinking level `{k}` for `{reference}`"),
                                    "the levels are minimal, low, medium, high and max",
                                    "list the levels the model accepts, or none for a model that does not think",
                                )
                                .with_value(k));
                        };
                        if !levels.contains(&level) {
                            levels.push(level);
                        }
                    }
                    levels.sort();
                    m.thinking = Some(levels);
                }
                "cache" => m.cache = Some(self.cache(f, &reference)?),
                "price" => self.price(f, &reference, &mut m)?,
                other => {
                    return Err(self
                        .error(
                            f.span().offset(),
                            "catalog.unknown-field",
                            format!("unknown field `{other}` for `{reference}`"),
                            "the fields are name, context, max-output, input, tools, thinking, strict-tools, cache and price",
                            "fix the spelling or delete the line",
                        )
                        .with_value(other));
                }
            }
        }
        if let (Some(ctx), Some(out)) = (m.context, m.max_output)
            && out > ctx
        {
            return Err(self
                .error(
                    node.span().offset(),
                    "catalog.invalid-limits",
                    format!("`{reference}` allows {out} output tokens in a {ctx}-token context"),
                    "the output limit cannot exceed the context window it is part of",
                    "check both limits against the provider's model page",
                )
                .with_value(out));
        }
        Ok(m)
    }

    fn strings<'n>(&self, f: &'n KdlNode) -> Result<Vec<(&'n str, &'n KdlEntry)>, Diagnostic> {
        f.entries()
            .iter()
            .map(|e| match (e.name(), e.value()) {
                (None, KdlValue::String(s)) => Ok((s.as_str(), e)),
                _ => Err(self.error(
                    e.span().offset(),
                    "catalog.invalid",
                    format!("`{}` takes quoted names", f.name().value()),
                    "each value is a name such as \"text\" or \"high\"",
                    "quote each value and drop any `key=`",
                )),
            })
            .collect()
    }

    fn positive(&self, f: &KdlNode, reference: &str) -> Result<u64, Diagnostic> {
        let name = f.name().value();
        match f.entries() {
            [e] if e.name().is_none() => match e.value() {
                KdlValue::Integer(n) if *n > 0 && *n <= i128::from(u64::MAX) => {
                    Ok(u64::try_from(*n).unwrap_or(u64::MAX))
                }
                other => Err(self
                    .error(
                        e.span().offset(),
                        "catalog.invalid",
                        format!("`{name}` for `{reference}` is {other}"),
                        "limits are positive whole numbers of tokens; leave the line out when unknown",
                        format!("write `{name} 200000`"),
                    )
                    .with_value(other)),
            },
            _ => Err(self.error(
                f.span().offset(),
                "catalog.invalid",
                format!("`{name}` for `{reference}` needs exactly one number"),
                "a limit is one whole number of tokens",
                format!("write `{name} 200000`"),
            )),
        }
    }

    fn boolean(&self, f: &KdlNode, reference: &str) -> Result<bool, Diagnostic> {
        let name = f.name().value();
        match f.entries() {
            [e] if e.name().is_none() => match e.value() {
                KdlValue::Bool(b) => Ok(*b),
                other => Err(self
                    .error(
                        e.span().offset(),
                        "catalog.invalid",
                        format!("`{name}` for `{reference}` is {other}"),
                        "this field is yes or no",
                        format!(
                            "write `{name} #true` or `{name} #false`; leave it out when unknown"
                        ),
                    )
                    .with_value(other)),
            },
            _ => Err(self.error(
                f.span().offset(),
                "catalog.invalid",
                format!("`{name}` for `{reference}` needs exactly one value"),
                "this field is yes or no",
                format!("write `{name} #true`"),
            )),
        }
    }

    fn cache(&self, f: &KdlNode, reference: &str) -> Result<CacheBehavior, Diagnostic> {
        let mut kind = None;
        let mut breakpoints = None;
        for e in f.entries() {
            match (e.name().map(|n| n.value()), e.value()) {
                (None, KdlValue::String(s)) if kind.is_none() => kind = Some(s.as_str()),
                (Some("breakpoints"), KdlValue::Integer(n)) if *n > 0 && *n <= 64 => {
                    breakpoints = u32::try_from(*n).ok();
                }
                _ => {
                    return Err(self.error(
                        e.span().offset(),
                        "catalog.invalid",
                        format!("`cache` for `{reference}` has an unexpected value"),
                        "cache is \"none\", \"automatic\", or \"explicit\" with breakpoints=N (1 to 64)",
                        "write e.g. `cache \"explicit\" breakpoints=4`",
                    ));
                }
            }
        }
        match (kind, breakpoints) {
            (Some("none"), None) => Ok(CacheBehavior::None),
            (Some("automatic"), None) => Ok(CacheBehavior::Automatic),
            (Some("explicit"), Some(max_breakpoints)) => {
                Ok(CacheBehavior::Explicit { max_breakpoints })
            }
            _ => Err(self.error(
                f.span().offset(),
                "catalog.invalid",
                format!("`cache` for `{reference}` is incomplete or contradictory"),
                "cache is \"none\", \"automatic\", or \"explicit\" with breakpoints=N; only explicit takes breakpoints",
                "write e.g. `cache \"explicit\" breakpoints=4` or `cache \"automatic\"`",
            )),
        }
    }

    fn price(&self, f: &KdlNode, reference: &str, m: &mut ModelInfo) -> Result<(), Diagnostic> {
        if f.entries().is_empty() {
            return Err(self.error(
                f.span().offset(),
                "catalog.invalid",
                format!("`price` for `{reference}` states no price"),
                "an empty price line says nothing; unknown prices are left out",
                "write e.g. `price input=3.0 output=15.0` or delete the line",
            ));
        }
        for e in f.entries() {
            let key = e.name().map(|n| n.value().to_owned());
            let value = match e.value() {
                KdlValue::Float(v) => Some(*v),
                KdlValue::Integer(v) => i32::try_from(*v).ok().map(f64::from),
                _ => None,
            };
            let slot = match key.as_deref() {
                Some("input") => &mut m.pricing.input,
                Some("output") => &mut m.pricing.output,
                Some("cache-read") => &mut m.pricing.cache_read,
                Some("cache-write") => &mut m.pricing.cache_write,
                _ => {
                    return Err(self.error(
                        e.span().offset(),
                        "catalog.invalid",
                        format!("`price` for `{reference}` has an unknown entry"),
                        "prices are input=, output=, cache-read= and cache-write=, in dollars per million tokens",
                        "write e.g. `price input=3.0 output=15.0`",
                    ));
                }
            };
            match value {
                Some(v) if v.is_finite() && v >= 0.0 => {
                    if slot.replace(v).is_some() {
                        return Err(self.error(
                            e.span().offset(),
                            "catalog.duplicate-field",
                            format!("a price is stated twice for `{reference}`"),
                            "two values for one price leave it unclear which is meant",
                            "delete one of them",
                        ));
                    }
                }
                _ => {
                    return Err(self
                        .error(
                            e.span().offset(),
                            "catalog.invalid-price",
                            format!("a price for `{reference}` is not a usable number"),
                            "prices are finite, non-negative dollars per million tokens; unknown prices are left out, never written as 0",
                            "write the price from the provider's pricing page, or delete the entry",
                        )
                        .with_value(e.value()));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<ModelInfo>, Diagnostic> {
        parse_catalog(text, Path::new("test.kdl"))
    }

    #[test]
    fn model_ids_may_hold_a_slash_after_their_first_character() {
        // OpenRouter, Groq, Together and most local servers name models
        // `org/name`; the reference splits at its first `/`.
        let models = parse(
            "provider \"openai-compatible\" {\n model \"openai/gpt-oss-120b\" { tools #true }\n}",
        )
        .expect("a model id with `/` is accepted");
        assert_eq!(models.len(), 1);
        assert_eq!(models[0].provider, "openai-compatible");
        assert_eq!(models[0].id, "openai/gpt-oss-120b");
        assert_eq!(
            models[0].reference(),
            "openai-compatible/openai/gpt-oss-120b"
        );
    }

    fn err_code(text: &str) -> String {
        match parse(text) {
            Ok(m) => panic!("accepted: {m:?}"),
            Err(d) => {
                assert!(d.is_complete(), "{}", d.render_plain());
                d.code().to_owned()
            }
        }
    }

    #[test]
    fn parses_a_full_entry() {
        let models = parse(
            r#"provider "p" {
                model "m-1" {
                    name "M One"
                    context 1000
                    max-output 100
                    input "text" "image"
                    tools #true
                    thinking "high" "low"
                    strict-tools #false
                    cache "explicit" breakpoints=4
                    price input=1 output=2.5 cache-read=0.1 cache-write=1.25
                }
            }"#,
        )
        .unwrap();
        let m = &models[0];
        assert_eq!(m.reference(), "p/m-1");
        assert_eq!(m.name.as_deref(), Some("M One"));
        assert_eq!((m.context, m.max_output), (Some(1000), Some(100)));
        assert_eq!((m.text_input, m.image_input), (Some(true), Some(true)));
        assert_eq!(
            m.thinking,
            Some(vec![ThinkingLevel::Low, ThinkingLevel::High])
        );
        assert_eq!(m.strict_tools, Some(false));
        assert_eq!(
            m.cache,
            Some(CacheBehavior::Explicit { max_breakpoints: 4 })
        );
        assert_eq!(m.pricing.input, Some(1.0));
        assert_eq!(m.pricing.cache_write, Some(1.25));
    }

    #[test]
    fn left_out_fields_stay_unknown_not_zero() {
        let models = parse("provider \"p\" { model \"m\" }").unwrap();
        assert_eq!(models[0], ModelInfo::new("p", "m"));
        assert_eq!(models[0].pricing.input, None);
    }

    #[test]
    fn empty_thinking_states_no_thinking() {
        let models = parse("provider \"p\" { model \"m\" { thinking } }").unwrap();
        assert_eq!(models[0].thinking, Some(vec![]));
    }

    #[test]
    fn rejects_each_kind_of_invalid_entry() {
        let cases = [
            ("model \"m\"", "catalog.unknown-node"),
            ("provider \"p\" { modle \"m\" }", "catalog.unknown-node"),
            (
                "provider \"p\" { model \"m\" { contxt 5 } }",
                "catalog.unknown-field",
            ),
            (
                "provider \"p\" { model \"m\" { context 0 } }",
                "catalog.invalid",
            ),
            (
                "provider \"p\" { model \"m\" { context -5 } }",
                "catalog.invalid",
            ),
            (
                "provider \"p\" { model \"m\" { context \"big\" } }",
                "catalog.invalid",
            ),
            (
                "provider \"p\" { model \"m\" { context 5\n context 6 } }",
                "catalog.duplicate-field",
            ),
            (
                "provider \"p\" { model \"m\" { context 5\n max-output 6 } }",
                "catalog.invalid-limits",
            ),
            (
                "provider \"p\" { model \"m\" { tools \"yes\" } }",
                "catalog.invalid",
            ),
            (
                "provider \"p\" { model \"m\" { thinking \"ultra\" } }",
                "catalog.invalid",
            ),
            (
                "provider \"p\" { model \"m\" { input \"audio\" } }",
                "catalog.invalid",
            ),
            (
                "provider \"p\" { model \"m\" { cache \"explicit\" } }",
                "catalog.invalid",
            ),
            (
                "provider \"p\" { model \"m\" { cache \"none\" breakpoints=2 } }",
                "catalog.invalid",
            ),
            (
                "provider \"p\" { model \"m\" { price input=-1 } }",
                "catalog.invalid-price",
            ),
            (
                "provider \"p\" { model \"m\" { price input=#nan } }",
                "catalog.invalid-price",
            ),
            (
                "provider \"p\" { model \"m\" { price dinner=3 } }",
                "catalog.invalid",
            ),
            (
                "provider \"p\" { model \"m\" { price } }",
                "catalog.invalid",
            ),
            (
                "provider \"p\" { model \"m\" { price input=1 input=2 } }",
                "catalog.duplicate-field",
            ),
            (
                "provider \"p\" { model \"m\"\n model \"m\" }",
                "catalog.duplicate-model",
            ),
            ("provider \"p\" { model \"/b\" }", "catalog.invalid-id"),
            ("provider \"p\" { model \"a/\" }", "catalog.invalid-id"),
            ("provider \"p\" { model \"a b\" }", "catalog.invalid-id"),
            ("provider \"p/q\" { model \"m\" }", "catalog.invalid-id"),
            ("provider \"\" { model \"m\" }", "catalog.invalid-id"),
            ("provider \"p\"", "catalog.invalid"),
            ("provider \"p\" { model \"m\" {", "catalog.parse"),
        ];
        for (text, code) in cases {
            assert_eq!(err_code(text), code, "for {text:?}");
        }
    }

    fn arb_model() -> impl proptest::strategy::Strategy<Value = ModelInfo> {
        use proptest::prelude::*;
        let price = || proptest::option::of((0u32..100_000).prop_map(|c| f64::from(c) / 100.0));
        (
            ("[a-z][a-z0-9.-]{0,12}", proptest::option::of("[ -~]{0,20}")),
            (
                proptest::option::of(1u64..2_000_000),
                proptest::option::of(1u64..2_000_000),
            ),
            (
                proptest::option::of(any::<bool>()),
                proptest::option::of(any::<bool>()),
            ),
            (
                proptest::option::of(any::<bool>()),
                proptest::option::of(any::<bool>()),
            ),
            proptest::option::of(proptest::sample::subsequence(
                ThinkingLevel::ALL.to_vec(),
                0..=5,
            )),
            proptest::option::of(prop_oneof![
                Just(CacheBehavior::None),
                Just(CacheBehavior::Automatic),
                (1u32..=64).prop_map(|n| CacheBehavior::Explicit { max_breakpoints: n }),
            ]),
            (price(), price(), price(), price()),
        )
            .prop_map(
                |((id, name), (a, b), (text, image), (tools, strict), thinking, cache, p)| {
                    let mut m = ModelInfo::new("p", id);
                    m.name = name;
                    // The output limit never exceeds the context.
                    (m.context, m.max_output) = match (a, b) {
                        (Some(a), Some(b)) => (Some(a.max(b)), Some(a.min(b))),
                        other => other,
                    };
                    // `input` states both kinds at once.
                    if text.is_some() || image.is_some() {
                        m.text_input = Some(text.unwrap_or(false));
                        m.image_input = Some(image.unwrap_or(false));
                    }
                    m.tools = tools;
                    m.strict_tools = strict;
                    m.thinking = thinking;
                    m.cache = cache;
                    m.pricing = crate::model::Pricing {
                        input: p.0,
                        output: p.1,
                        cache_read: p.2,
                        cache_write: p.3,
                    };
                    m
                },
            )
    }

    proptest::proptest! {
        #[test]
        fn rendered_catalogs_parse_back_to_the_same_models(
            models in proptest::collection::vec(arb_model(), 0..6)
        ) {
            let mut seen = HashSet::new();
            let models: Vec<ModelInfo> =
                models.into_iter().filter(|m| seen.insert(m.id.clone())).collect();
            let text = render_catalog(&models);
            let back = parse(&text).map_err(|d| proptest::test_runner::TestCaseError::fail(
                format!("{}\n{text}", d.render_plain()),
            ))?;
            proptest::prop_assert_eq!(back, models);
        }
    }

    #[test]
    fn the_bundled_catalog_renders_and_parses_back() {
        let models = crate::bundled().unwrap();
        assert_eq!(parse(&render_catalog(&models)).unwrap(), models);
    }

    #[test]
    fn user_files_hold_routes_and_the_bundled_format_does_not() {
        let text = "alias \"fast\" \"p/m\"\ngroup \"main\" \"fast\" \"q/n@work\"\nbucket \"work\" provider=\"q\" slot=\"work\"\nprovider \"p\" { model \"m\" }\nprovider \"q\" { model \"n\" }";
        let (models, routes) = parse_user_file(text, Path::new("models.kdl")).unwrap();
        assert_eq!(models.len(), 2);
        let snap = crate::Catalog::new(models).snapshot();
        let targets: Vec<String> = routes
            .resolve("main", &snap)
            .unwrap()
            .iter()
            .map(crate::Target::reference)
            .collect();
        assert_eq!(targets, ["p/m", "q/n@work"]);
        assert_eq!(err_code(text), "catalog.unknown-node");
        for (bad, code) in [
            ("alias \"a\"", "catalog.invalid-route"),
            ("alias \"a\" \"p/m\" \"q/n\"", "catalog.invalid-route"),
            ("alias \"p/x\" \"p/m\"", "catalog.invalid-route"),
            ("group \"g\"", "catalog.invalid-route"),
            ("group \"g\" 5", "catalog.invalid-route"),
            ("bucket \"b\" provider=\"p\"", "catalog.invalid-route"),
            (
                "alias \"a\" \"p/m\"\nalias \"a\" \"p/n\"",
                "catalog.duplicate-route",
            ),
        ] {
            let d = parse_user_file(bad, Path::new("models.kdl")).unwrap_err();
            assert_eq!(d.code(), code, "for {bad:?}");
            assert!(d.is_complete());
        }
    }

    #[test]
    fn a_catalog_nested_too_deep_is_refused_before_parsing() {
        // Deep enough to exhaust a test thread's stack in the parser.
        let text = format!(
            "provider \"p\" {{{}{}",
            "x {\n".repeat(200_000),
            "}".repeat(200_000)
        );
        for (d, name) in [
            (
                parse_user_file(&text, Path::new("models.kdl")).unwrap_err(),
                "models.kdl",
            ),
            (parse(&text).unwrap_err(), "test.kdl"),
        ] {
            assert_eq!(d.code(), "catalog.too-deep");
            assert!(d.is_complete());
            assert!(d.what().contains(name), "{d:?}");
            match d.surface() {
                Some(Surface::File { at: Some(at), .. }) => assert_eq!(at.line, 64),
                other => panic!("{other:?}"),
            }
        }
        // At the limit it is parsed (and refused for what it says, not for
        // its depth).
        let text = format!("provider \"p\" {{{}{}", "x {\n".repeat(63), "}".repeat(64));
        let d = parse_user_file(&text, Path::new("models.kdl")).unwrap_err();
        assert_ne!(d.code(), "catalog.too-deep");
    }

    #[test]
    fn errors_point_at_the_line() {
        let d = parse("provider \"p\" {\n  model \"m\" {\n    contxt 5\n  }\n}").unwrap_err();
        match d.surface() {
            Some(Surface::File { at: Some(at), .. }) => assert_eq!(at.line, 3),
            other => panic!("{other:?}"),
        }
    }
}
