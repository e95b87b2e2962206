//! Routing: aliases, groups and account buckets, resolved to an ordered
//! list of concrete targets without any network access.
//!
//! A *name* is one of:
//!
//! - `provider/model` — a concrete model;
//! - `provider/model@bucket` — a concrete model on an account bucket (a
//!   named credential slot of that provider);
//! - an alias name — stands for one other name;
//! - a group name — stands for an ordered list of names (the failover order);
//! - a bare model id — the catalog model of that id, when exactly one
//!   provider lists it.
//!
//! Resolution is a depth-first expansion in the written order; a target
//! reached twice is kept at its first position, so the result is the same
//! on every run. A name that refers back to itself (a cycle), a name defined
//! both as an alias and a group, a bare id listed by several providers, an
//! unknown name or bucket each fail with a diagnostic that shows the full
//! path from the name asked for and every definition that refers to the
//! offending name.

use std::collections::BTreeMap;

use smith_diag::Diagnostic;

use crate::catalog::Snapshot;

/// A named credential slot of one provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bucket {
    /// The provider the bucket belongs to.
    pub provider: String,
    /// The credential slot it uses.
    pub slot: String,
}

/// One concrete place to send a request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    /// The provider.
    pub provider: String,
    /// The model id.
    pub model: String,
    /// The account bucket, if one was named.
    pub bucket: Option<String>,
}

impl Target {
    /// `provider/model` or `provider/model@bucket`.
    pub fn reference(&self) -> String {
        match &self.bucket {
            Some(b) => format!("{}/{}@{b}", self.provider, self.model),
            None => format!("{}/{}", self.provider, self.model),
        }
    }
}

/// Aliases, groups and buckets as configured.
#[derive(Debug, Clone, Default)]
pub struct Routes {
    aliases: BTreeMap<String, String>,
    groups: BTreeMap<String, Vec<String>>,
    buckets: BTreeMap<String, Bucket>,
}

impl Routes {
    /// No routes.
    pub fn new() -> Routes {
        Routes::default()
    }

    /// Defines `name` as another name for `target`.
    pub fn alias(mut self, name: impl Into<String>, target: impl Into<String>) -> Routes {
        self.aliases.insert(name.into(), target.into());
        self
    }

    /// Defines `name` as the ordered list `members`.
    pub fn group<S: Into<String>>(
        mut self,
        name: impl Into<String>,
        members: impl IntoIterator<Item = S>,
    ) -> Routes {
        self.groups
            .insert(name.into(), members.into_iter().map(Into::into).collect());
        self
    }

    /// Defines the account bucket `name` as `provider`'s credential `slot`.
    pub fn bucket(
        mut self,
        name: impl Into<String>,
        provider: impl Into<String>,
        slot: impl Into<String>,
    ) -> Routes {
        self.buckets.insert(
            name.into(),
            Bucket {
                provider: provider.into(),
                slot: slot.into(),
            },
        );
        self
    }

    /// The bucket called `name`.
    pub fn get_bucket(&self, name: &str) -> Option<&Bucket> {
        self.buckets.get(name)
    }

    /// Every definition that mentions `name`, as `alias X` / `group Y`.
    pub fn referrers(&self, name: &str) -> Vec<String> {
        let mut out = Vec::new();
        for (a, t) in &self.aliases {
            if t == name {
                out.push(format!("alias `{a}`"));
            }
        }
        for (g, members) in &self.groups {
            if members.iter().any(|m| m == name) {
                out.push(format!("group `{g}`"));
            }
        }
        out
    }

    /// Resolves `name` to its ordered, duplicate-free targets.
    ///
    /// # Errors
    ///
    /// A diagnostic with the full path and every referrer (see the module
    /// documentation).
    pub fn resolve(&self, name: &str, catalog: &Snapshot) -> Result<Vec<Target>, Diagnostic> {
        let mut out = Vec::new();
        let mut path = Vec::new();
        self.expand(name, catalog, &mut path, &mut out)?;
        Ok(out)
    }

    /// Resolves every alias and group and returns every problem found.
    pub fn check(&self, catalog: &Snapshot) -> Vec<Diagnostic> {
        let names = self.aliases.keys().chain(self.groups.keys());
        let mut problems: Vec<Diagnostic> = Vec::new();
        for name in names {
            if let Err(d) = self.resolve(name, catalog)
                && !problems.iter().any(|p| p.what() == d.what())
            {
                problems.push(d);
            }
        }
        problems
    }

    fn expand(
        &self,
        name: &str,
        catalog: &Snapshot,
        path: &mut Vec<String>,
        out: &mut Vec<Target>,
    ) -> Result<(), Diagnostic> {
        if let Some(start) = path.iter().position(|p| p == name) {
            let cycle: Vec<&str> = path[start..]
                .iter()
                .map(String::as_str)
                .chain([name])
                .collect();
            let mut referrers: Vec<String> = path[start..]
                .iter()
                .flat_map(|n| self.referrers(n))
                .collect();
            referrers.sort();
            referrers.dedup();
            return Err(Diagnostic::error(
                "route.cycle",
                format!(
                    "`{}` refers back to itself: {}",
                    path[0],
                    full_path(path, name)
                ),
                format!(
                    "the cycle {} never reaches a model; definitions in it are referred to by {}",
                    cycle.join(" -> "),
                    referrers.join(", ")
                ),
                format!(
                    "make one of {} point at a model (`provider/model`) instead",
                    cycle[..cycle.len() - 1]
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .with_value(name));
        }
        path.push(name.to_owned());
        let result = self.expand_one(name, catalog, path, out);
        path.pop();
        result
    }

    fn expand_one(
        &self,
        name: &str,
        catalog: &Snapshot,
        path: &mut Vec<String>,
        out: &mut Vec<Target>,
    ) -> Result<(), Diagnostic> {
        if let Some((provider, rest)) = name.split_once('/') {
            let (model, bucket) = match rest.split_once('@') {
                Some((m, b)) => (m, Some(b)),
                None => (rest, None),
            };
            if provider.is_empty() || model.is_empty() || bucket.is_some_and(str::is_empty) {
                return Err(self.bad_name(name, path, "a model reference is `provider/model` or `provider/model@bucket`, with no part empty"));
            }
            if let Some(b) = bucket {
                match self.buckets.get(b) {
                    None => {
                        return Err(Diagnostic::error(
                            "route.unknown-bucket",
                            format!("bucket `{b}` in `{name}` is not defined (path: {})", path.join(" -> ")),
                            format!("no account bucket of that name is configured; referred to by {}", or_none(&self.referrers(name))),
                            format!("define the bucket as a credential slot of `{provider}`, or drop `@{b}`"),
                        )
                        .with_value(name));
                    }
                    Some(def) if def.provider != provider => {
                        return Err(Diagnostic::error(
                            "route.bucket-provider",
                            format!(
                                "bucket `{b}` belongs to `{}`, not `{provider}` (path: {})",
                                def.provider,
                                path.join(" -> ")
                            ),
                            "an account bucket holds credentials for one provider only",
                            format!("use a bucket of `{provider}` or a `{}` model", def.provider),
                        )
                        .with_value(name));
                    }
                    Some(_) => {}
                }
            }
            let target = Target {
                provider: provider.to_owned(),
                model: model.to_owned(),
                bucket: bucket.map(str::to_owned),
            };
            if !out.contains(&target) {
                out.push(target);
            }
            return Ok(());
        }
        match (self.aliases.get(name), self.groups.get(name)) {
            (Some(target), None) => self.expand(target, catalog, path, out),
            (None, Some(members)) => {
                for m in members {
                    self.expand(m, catalog, path, out)?;
                }
                Ok(())
            }
            (Some(_), Some(_)) => Err(Diagnostic::error(
                "route.ambiguous",
                format!(
                    "`{name}` is both an alias and a group (path: {})",
                    path.join(" -> ")
                ),
                format!(
                    "smith cannot tell which is meant; `{name}` is referred to by {}",
                    or_none(&self.referrers(name))
                ),
                format!("rename the alias or the group called `{name}`"),
            )
            .with_value(name)),
            (None, None) => {
                let candidates: Vec<String> = catalog
                    .entries
                    .iter()
                    .filter(|e| e.model.id == name)
                    .map(|e| e.model.reference())
                    .collect();
                match candidates.as_slice() {
                    [one] => self.expand(one, catalog, path, out),
                    [] => Err(self.bad_name(
                        name,
                        path,
                        "it is no alias, group, bucket-qualified model or catalog model id",
                    )),
                    many => Err(Diagnostic::error(
                        "route.ambiguous",
                        format!(
                            "model id `{name}` is listed by several providers (path: {})",
                            path.join(" -> ")
                        ),
                        format!(
                            "it could mean any of {}; it is referred to by {}",
                            many.join(", "),
                            or_none(&self.referrers(name))
                        ),
                        format!("write the provider too, e.g. `{}`", many[0]),
                    )
                    .with_value(name)),
                }
            }
        }
    }

    fn bad_name(&self, name: &str, path: &[String], why: &str) -> Diagnostic {
        Diagnostic::error(
            "route.unknown",
            format!("`{name}` names no model (path: {})", path.join(" -> ")),
            format!(
                "{why}; it is referred to by {}",
                or_none(&self.referrers(name))
            ),
            "write `provider/model` (see `smith models`) or define the alias or group",
        )
        .with_value(name)
        .with_example("anthropic/claude-sonnet-4-5-20250929")
    }
}

fn full_path(path: &[String], name: &str) -> String {
    let mut p: Vec<&str> = path.iter().map(String::as_str).collect();
    p.push(name);
    p.join(" -> ")
}

fn or_none(referrers: &[String]) -> String {
    if referrers.is_empty() {
        "nothing else (it was asked for directly)".to_owned()
    } else {
        referrers.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::model::ModelInfo;

    fn snapshot() -> std::sync::Arc<Snapshot> {
        Catalog::new(vec![
            ModelInfo::new("a", "m1"),
            ModelInfo::new("b", "m2"),
            ModelInfo::new("a", "shared"),
            ModelInfo::new("b", "shared"),
        ])
        .snapshot()
    }

    fn refs(t: &[Target]) -> Vec<String> {
        t.iter().map(Target::reference).collect()
    }

    #[test]
    fn groups_expand_in_order_without_duplicates() {
        let r = Routes::new()
            .alias("fast", "a/m1")
            .bucket("work", "b", "work")
            .group("main", ["fast", "b/m2@work", "m2", "a/m1"]);
        let t = r.resolve("main", &snapshot()).unwrap();
        assert_eq!(refs(&t), ["a/m1", "b/m2@work", "b/m2"]);
        // Deterministic: the same answer every time.
        assert_eq!(r.resolve("main", &snapshot()).unwrap(), t);
    }

    #[test]
    fn a_cycle_reports_the_full_path_and_every_referrer() {
        let r = Routes::new()
            .group("top", ["a/m1", "x"])
            .alias("x", "y")
            .alias("y", "x")
            .alias("other", "y");
        let d = r.resolve("top", &snapshot()).unwrap_err();
        assert_eq!(d.code(), "route.cycle");
        assert!(d.what().contains("top -> x -> y -> x"), "{}", d.what());
        for referrer in ["alias `x`", "alias `y`", "alias `other`", "group `top`"] {
            assert!(
                d.why().contains(referrer),
                "{referrer} missing: {}",
                d.why()
            );
        }
        assert!(d.is_complete());
    }

    #[test]
    fn ambiguity_names_every_candidate() {
        let r = Routes::new().alias("pick", "shared");
        let d = r.resolve("pick", &snapshot()).unwrap_err();
        assert_eq!(d.code(), "route.ambiguous");
        assert!(d.why().contains("a/shared") && d.why().contains("b/shared"));
        assert!(d.why().contains("alias `pick`"));
        let r = Routes::new().alias("dup", "a/m1").group("dup", ["b/m2"]);
        assert_eq!(
            r.resolve("dup", &snapshot()).unwrap_err().code(),
            "route.ambiguous"
        );
    }

    #[test]
    fn buckets_must_exist_and_match_the_provider() {
        let r = Routes::new().bucket("work", "b", "work");
        let s = snapshot();
        assert_eq!(
            r.resolve("a/m1@home", &s).unwrap_err().code(),
            "route.unknown-bucket"
        );
        assert_eq!(
            r.resolve("a/m1@work", &s).unwrap_err().code(),
            "route.bucket-provider"
        );
        assert_eq!(
            r.resolve("nothing", &s).unwrap_err().code(),
            "route.unknown"
        );
        assert_eq!(r.resolve("a/", &s).unwrap_err().code(), "route.unknown");
    }

    #[test]
    fn check_reports_every_broken_definition() {
        let r = Routes::new()
            .alias("good", "a/m1")
            .alias("bad", "missing")
            .alias("loop", "loop");
        let problems = r.check(&snapshot());
        let codes: Vec<&str> = problems.iter().map(Diagnostic::code).collect();
        assert_eq!(codes, ["route.unknown", "route.cycle"]);
    }
}
