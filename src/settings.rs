//! The options only the binary itself reads (the bench plan); every option
//! a runtime needs is resolved by [`smith_host::settings`], re-exported
//! here, and the interface's own by `smith_interface`.
//!
//! [`CONSUMERS`] names, for every declared option, the function that reads
//! it; a test holds the table to `smith_config::options::ALL` and to the
//! sources of the binary, the host and the interface, so an option nothing reads cannot be
//! declared silently.

use smith_config::Config;
use smith_config::options::BENCH_SAMPLES;
pub(crate) use smith_host::settings::{config, session_root};

/// The measuring plan of `smith bench`: `--quick` takes the quick plan
/// whatever is configured; otherwise the full plan with `bench.samples`
/// samples per benchmark.
pub(crate) fn bench_plan(config: &Config, quick: bool) -> smith_perf::Plan {
    if quick {
        return smith_perf::Plan::QUICK;
    }
    let full = smith_perf::Plan::FULL;
    smith_perf::Plan {
        samples: config
            .int(&BENCH_SAMPLES)
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(full.samples),
        ..full
    }
}

/// For every declared option: the file and the function that reads it.
/// A test checks each function exists, mentions the option's declaration
/// and is called, and that every option of `smith_config::options::ALL` is
/// listed once.
#[cfg(test)]
pub(crate) static CONSUMERS: &[(&str, &str, &str)] = &[
    ("provider", "host/src/provider.rs", "choose"),
    ("approval", "host/src/settings.rs", "approval_mode"),
    ("model", "host/src/provider.rs", "choose"),
    ("thinking", "host/src/provider.rs", "thinking_level"),
    (
        "plan",
        "plugins/builtin/plan/src/lib.rs",
        "start_in_plan_mode",
    ),
    ("agent", "plugins/builtin/agents/src/lib.rs", "selected"),
    ("color", "frontends/interface/src/config.rs", "load_options"),
    ("log.level", "host/src/settings.rs", "log_settings"),
    ("log.file", "host/src/settings.rs", "log_settings"),
    ("session.dir", "host/src/settings.rs", "sessions_dir"),
    (
        "session.compression",
        "host/src/settings.rs",
        "session_compression",
    ),
    (
        "tui.confirm-exit",
        "frontends/interface/src/config.rs",
        "load_options",
    ),
    (
        "tui.theme",
        "frontends/interface/src/config.rs",
        "tui_theme",
    ),
    (
        "tui.mouse",
        "frontends/interface/src/config.rs",
        "tui_mouse",
    ),
    (
        "tui.scroll-lines",
        "frontends/interface/src/config.rs",
        "load_options",
    ),
    (
        "net.connect-timeout-s",
        "host/src/settings.rs",
        "net_timeouts",
    ),
    ("net.head-timeout-s", "host/src/settings.rs", "net_timeouts"),
    (
        "net.body-gap-timeout-s",
        "host/src/settings.rs",
        "net_timeouts",
    ),
    (
        "catalog.refresh",
        "host/src/catalog.rs",
        "background_refresh",
    ),
    ("openai.api", "host/src/provider.rs", "choose"),
    (
        "plugins.abort-deadline-ms",
        "host/src/settings.rs",
        "plugin_limits",
    ),
    (
        "plugins.max-ui-intents",
        "host/src/settings.rs",
        "plugin_limits",
    ),
    (
        "plugins.max-log-lines",
        "host/src/settings.rs",
        "plugin_limits",
    ),
    (
        "plugins.max-journal-entries",
        "host/src/settings.rs",
        "plugin_limits",
    ),
    (
        "instructions.max-bytes",
        "plugins/builtin/instructions/src/lib.rs",
        "budget",
    ),
    ("sandbox.network", "host/src/sandbox.rs", "network_setting"),
    (
        "sandbox.write-paths",
        "host/src/sandbox.rs",
        "policy_builder",
    ),
    ("sandbox.deny-read", "host/src/sandbox.rs", "policy_builder"),
    ("bash.on-timeout", "host/src/settings.rs", "bash_limits"),
    ("bash.max-jobs", "host/src/settings.rs", "bash_limits"),
    ("update.url", "src/cmd/update.rs", "release_url"),
    ("update.trusted-keys", "src/cmd/update.rs", "trusted_keys"),
    (
        "web.allow-hosts",
        "plugins/src/effects/web.rs",
        "web_allow_hosts",
    ),
    (
        "web.timeout-s",
        "plugins/builtin/web/src/lib.rs",
        "timeout_ms",
    ),
    (
        "web.search-provider",
        "plugins/src/effects/web_search.rs",
        "search_provider",
    ),
    (
        "web.searxng-url",
        "plugins/builtin/searxng/src/lib.rs",
        "ready",
    ),
    (
        "web.brave-url",
        "plugins/builtin/brave/src/lib.rs",
        "search",
    ),
    ("bench.samples", "src/settings.rs", "bench_plan"),
];

#[cfg(test)]
mod tests {
    use std::path::Path;

    use smith_config::{Loader, Paths};

    use super::*;

    /// A configuration over an empty home with these `SMITH_*` variables.
    fn with_env(vars: &[(&str, &str)]) -> (tempfile::TempDir, Config) {
        let home = tempfile::tempdir().unwrap();
        let config = Loader::new(Paths::under(home.path()))
            .env(vars.iter().copied())
            .load()
            .unwrap();
        (home, config)
    }

    #[test]
    fn bench_samples_set_the_full_plan_and_quick_keeps_its_own() {
        let (_home, config) = with_env(&[]);
        assert_eq!(bench_plan(&config, false), smith_perf::Plan::FULL);
        let (_home, config) = with_env(&[("SMITH_BENCH_SAMPLES", "7")]);
        let plan = bench_plan(&config, false);
        assert_eq!(plan.samples, 7);
        assert_eq!(plan.name, smith_perf::Plan::FULL.name);
        assert_eq!(bench_plan(&config, true), smith_perf::Plan::QUICK);
    }

    #[test]
    fn the_bench_samples_default_is_the_full_plan() {
        assert_eq!(
            BENCH_SAMPLES.default,
            Some(smith_config::options::Lit::Int(
                i64::try_from(smith_perf::Plan::FULL.samples).unwrap()
            ))
        );
    }

    /// The text of `fn name` in `source`: from its signature to the brace
    /// that closes its body.
    fn function_body<'a>(source: &'a str, name: &str) -> Option<&'a str> {
        let start = source.find(&format!("fn {name}("))?;
        let open = start + source[start..].find('{')?;
        let mut depth = 0usize;
        for (i, c) in source[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(&source[start..=open + i]);
                    }
                }
                _ => {}
            }
        }
        None
    }

    fn rust_sources(dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                // Calls from tests do not count as reading an option.
                let code = text
                    .split("#[cfg(test)]\nmod tests")
                    .next()
                    .unwrap_or_default();
                out.push(code.to_owned());
            }
        }
    }

    /// The static a declaration is named by: `tui.scroll-lines` ->
    /// `TUI_SCROLL_LINES`.
    fn static_name(key: &str) -> String {
        key.replace(['.', '-'], "_").to_uppercase()
    }

    /// How often `ident` occurs in `text` as a whole identifier that is not
    /// in a string literal's quotes nor a method of something else
    /// (`.ident`).
    fn identifier_uses(text: &str, ident: &str) -> usize {
        let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '"');
        text.match_indices(ident)
            .filter(|(at, _)| {
                let before = text[..*at].chars().next_back();
                !part(before)
                    && before != Some('.')
                    && !part(text[at + ident.len()..].chars().next())
            })
            .count()
    }

    #[test]
    fn every_declared_option_is_read_by_a_named_function() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let declared: Vec<&str> = smith_config::options::ALL.iter().map(|d| d.key).collect();
        let listed: Vec<&str> = CONSUMERS.iter().map(|(key, _, _)| *key).collect();
        assert_eq!(
            listed, declared,
            "CONSUMERS must list every declared option once, in declaration order"
        );
        let mut sources = Vec::new();
        rust_sources(&root.join("src"), &mut sources);
        rust_sources(&root.join("host/src"), &mut sources);
        rust_sources(&root.join("frontends/interface/src"), &mut sources);
        // A built-in plugin reads its option through `host.config-get`.
        rust_sources(&root.join("plugins/builtin/instructions/src"), &mut sources);
        rust_sources(&root.join("plugins/builtin/plan/src"), &mut sources);
        rust_sources(&root.join("plugins/builtin/agents/src"), &mut sources);
        rust_sources(&root.join("plugins/builtin/web/src"), &mut sources);
        rust_sources(&root.join("plugins/builtin/searxng/src"), &mut sources);
        rust_sources(&root.join("plugins/builtin/brave/src"), &mut sources);
        // The host enforces `web.allow-hosts` in the plugins' effects.
        rust_sources(&root.join("plugins/src/effects"), &mut sources);
        for (key, file, function) in CONSUMERS {
            let text = std::fs::read_to_string(root.join(file)).unwrap();
            let body = function_body(&text, function)
                .unwrap_or_else(|| panic!("{key}: {file} has no fn {function}"));
            let name = static_name(key);
            assert!(
                identifier_uses(body, &name) > 0,
                "{key}: fn {function} in {file} does not read {name}"
            );
            let uses: usize = sources.iter().map(|s| identifier_uses(s, function)).sum();
            let definitions: usize = sources
                .iter()
                .map(|s| s.matches(&format!("fn {function}(")).count())
                .sum();
            let calls = uses - definitions;
            assert!(calls > 0, "{key}: fn {function} in {file} is never called");
        }
    }
}
