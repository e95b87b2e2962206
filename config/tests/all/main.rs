//! Integration tests for smith-config: precedence, sources, golden
//! diagnostics, project trust, `config set`, the generated docs, and the
//! audit of every diagnostic this suite produces.

// Helpers outside `#[test]` functions unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};

use smith_config::options::{self, MODEL, NET_HEAD_TIMEOUT_S, TUI_THEME};
use smith_config::trust::{Project, TrustStatus, TrustStore};
use smith_config::{ConfigError, ErrorKind, Level, Loader, Paths, Source, Value};
use smith_diag::Diagnostic;

/// A fake credential; the audit proves no diagnostic shows it.
const TEST_SECRET: &str = "sk-smith-config-suite-77d1e0";

/// A sandbox: a user home (as `SMITH_HOME`) and a repository with a project.
struct Sandbox {
    tmp: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir_all(tmp.path().join("smith-home")).unwrap();
        fs::create_dir_all(tmp.path().join("repo/.git")).unwrap();
        fs::create_dir_all(tmp.path().join("repo/src/deep")).unwrap();
        Sandbox { tmp }
    }

    fn root(&self) -> &Path {
        self.tmp.path()
    }

    fn paths(&self) -> Paths {
        Paths::under(self.root().join("smith-home"))
    }

    fn repo(&self) -> PathBuf {
        self.root().join("repo")
    }

    fn write_user(&self, text: &str) -> PathBuf {
        let p = self.paths().user_config_file();
        fs::write(&p, text).unwrap();
        p
    }

    fn write_project(&self, text: &str) -> PathBuf {
        fs::create_dir_all(self.repo().join(".smith")).unwrap();
        let p = self.repo().join(".smith/config.kdl");
        fs::write(&p, text).unwrap();
        p
    }

    fn project(&self) -> Project {
        Project::at(&self.repo()).unwrap()
    }

    fn trust(&self) {
        TrustStore::open(&self.paths().trust_file())
            .unwrap()
            .trust(&self.project())
            .unwrap();
    }

    fn loader(&self) -> Loader {
        Loader::new(self.paths()).start_dir(self.repo().join("src/deep"))
    }

    /// Replaces temporary paths so rendered text is stable.
    fn normalize(&self, text: &str) -> String {
        let mut out = text.to_owned();
        if let Ok(canon) = fs::canonicalize(self.root()) {
            out = out.replace(&canon.display().to_string(), "<tmp>");
        }
        out.replace(&self.root().display().to_string(), "<tmp>")
    }
}

fn theme_of(loader: Loader) -> (String, Source) {
    let config = loader.load().unwrap();
    (
        config.str(&TUI_THEME).unwrap().to_owned(),
        config.source(&TUI_THEME).unwrap().clone(),
    )
}

// ---------------------------------------------------------------- precedence

/// Adds the layers below and including `top` (0 = default … 6 = flag), each
/// setting `tui.theme` to the level's name.
fn ladder(sb: &Sandbox, top: usize) -> Loader {
    let mut loader = sb.loader();
    if top >= 1 {
        loader = loader.builtin_plugin_default(
            "builtin-themes",
            "tui.theme",
            Value::Str("builtin".into()),
        );
    }
    if top >= 2 {
        loader = loader.plugin_contribution("theme-pack", "tui.theme", Value::Str("plugin".into()));
    }
    if top >= 3 {
        sb.write_user("tui {\n    theme user\n}\n");
    }
    if top >= 4 {
        sb.write_project("tui {\n    theme project\n}\n");
        sb.trust();
    }
    if top >= 5 {
        loader = loader.env([("SMITH_TUI_THEME", "env")]);
    }
    if top >= 6 {
        loader = loader.flag("--tui-theme", "flag");
    }
    loader
}

#[test]
fn each_precedence_level_beats_the_one_below() {
    let names = [
        "default", "builtin", "plugin", "user", "project", "env", "flag",
    ];
    for (top, expected_level) in Level::ALL.iter().enumerate() {
        let sb = Sandbox::new();
        let (value, source) = theme_of(ladder(&sb, top));
        assert_eq!(value, names[top], "with layers up to {expected_level:?}");
        assert_eq!(source.level(), *expected_level);
        // Every layer below is still recorded, in order.
        let config = ladder(&sb, top).load().unwrap();
        assert_eq!(config.levels("tui.theme"), Level::ALL[..=top].to_vec());
    }
}

#[test]
fn each_level_beats_the_one_below_in_isolation() {
    // Only two adjacent layers present at a time.
    for top in 1..Level::ALL.len() {
        let sb = Sandbox::new();
        let mut loader = sb.loader();
        for level in [top - 1, top] {
            loader = match level {
                0 => loader,
                1 => loader.builtin_plugin_default("b", "tui.theme", Value::Str("l1".into())),
                2 => loader.plugin_contribution("p", "tui.theme", Value::Str("l2".into())),
                3 => {
                    sb.write_user("tui { theme l3; }\n");
                    loader
                }
                4 => {
                    sb.write_project("tui { theme l4; }\n");
                    sb.trust();
                    loader
                }
                5 => loader.env([("SMITH_TUI_THEME", "l5")]),
                _ => loader.flag("--tui-theme", "l6"),
            };
        }
        let (value, source) = theme_of(loader);
        assert_eq!(value, format!("l{top}"));
        assert_eq!(source.level(), Level::ALL[top]);
    }
}

#[test]
fn sources_name_file_positions_variables_flags_and_plugins() {
    let sb = Sandbox::new();
    let user = sb.write_user("// user\nmodel \"from-user\"\ntui {\n    theme dark\n}\n");
    let project = sb.write_project("net {\n  head-timeout-s 60\n}\n");
    sb.trust();
    let config = sb
        .loader()
        .plugin_contribution("tuner", "tui.scroll-lines", Value::Int(5))
        .env([
            ("SMITH_NET_BODY_GAP_TIMEOUT_S", "30"),
            ("SMITH_HOME", "/ignored"),
        ])
        .flag("--log-level", "debug")
        .load()
        .unwrap();
    assert!(config.warnings().is_empty(), "{:?}", config.warnings());
    assert_eq!(
        config.source(&MODEL),
        Some(&Source::User {
            path: user.clone(),
            at: smith_diag::LineCol { line: 2, column: 7 }
        })
    );
    assert_eq!(
        config.source(&TUI_THEME).unwrap().to_string(),
        format!("user config {}:4:11", user.display())
    );
    let canonical_project = fs::canonicalize(&project).unwrap();
    assert_eq!(
        config.source(&NET_HEAD_TIMEOUT_S),
        Some(&Source::Project {
            path: canonical_project,
            at: smith_diag::LineCol {
                line: 2,
                column: 18
            }
        })
    );
    assert_eq!(config.int(&NET_HEAD_TIMEOUT_S), Some(60));
    assert_eq!(
        config
            .source(&options::NET_BODY_GAP_TIMEOUT_S)
            .unwrap()
            .to_string(),
        "env SMITH_NET_BODY_GAP_TIMEOUT_S"
    );
    assert_eq!(
        config.source(&options::LOG_LEVEL).unwrap().to_string(),
        "flag --log-level"
    );
    assert_eq!(
        config
            .source(&options::TUI_SCROLL_LINES)
            .unwrap()
            .to_string(),
        "plugin tuner"
    );
    assert_eq!(config.source(&options::PROVIDER), Some(&Source::Default));
    assert_eq!(config.str(&options::PROVIDER), Some("mock"));
    assert_eq!(config.get(&options::SESSION_DIR), None);
    // JSON carries the same.
    let json = config.to_json(true);
    let model = json["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["key"] == "model")
        .unwrap();
    assert_eq!(model["value"], "from-user");
    assert_eq!(model["source"]["level"], "user");
    assert_eq!(model["source"]["line"], 2);
    assert_eq!(model["sources"].as_array().unwrap().len(), 1);
}

#[test]
fn runtime_changes_sit_at_the_plugin_level_and_are_never_written() {
    let sb = Sandbox::new();
    let user = sb.write_user("model \"mine\"\n");
    let mut config = sb.loader().load().unwrap();
    config
        .set_runtime("router", "model", Value::Str("router-pick".into()))
        .unwrap();
    config
        .set_runtime("router", "tui.theme", Value::Str("contrast".into()))
        .unwrap();
    // The user's choice still wins over a handler's request.
    assert_eq!(config.str(&MODEL), Some("mine"));
    // Where nothing higher is set, the runtime change applies.
    assert_eq!(config.str(&TUI_THEME), Some("contrast"));
    assert_eq!(
        config.source(&TUI_THEME).unwrap().to_string(),
        "plugin router (runtime, not saved)"
    );
    // Nothing was persisted.
    assert_eq!(fs::read_to_string(&user).unwrap(), "model \"mine\"\n");
    let reloaded = sb.loader().load().unwrap();
    assert_eq!(reloaded.str(&TUI_THEME), Some("default"));
    // Invalid runtime requests name the plugin.
    let err = config
        .set_runtime("router", "net.head-timeout-s", Value::Int(0))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidValue);
    assert_eq!(
        err.diagnostic().surface().unwrap().to_string(),
        "plugin router (runtime change)"
    );
}

// ---------------------------------------------------------- golden messages

fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.txt"));
    if std::env::var_os("SMITH_BLESS").is_some() {
        fs::write(&path, actual).unwrap();
        return;
    }
    let expected = fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with SMITH_BLESS=1 to create it",
            path.display()
        )
    });
    assert_eq!(
        actual, expected,
        "golden {name} differs; SMITH_BLESS=1 rewrites it"
    );
}

fn load_err(loader: Loader) -> ConfigError {
    loader.load().unwrap_err()
}

#[test]
fn golden_error_messages() {
    let sb = Sandbox::new();
    type Case<'a> = (&'a str, Box<dyn Fn() -> Diagnostic + 'a>);
    let cases: Vec<Case<'_>> = vec![
        (
            "invalid_int_in_file",
            Box::new(|| {
                sb.write_user("net {\n    head-timeout-s \"soon\"\n}\n");
                load_err(sb.loader()).into_diagnostic()
            }),
        ),
        (
            "out_of_range_in_file",
            Box::new(|| {
                sb.write_user("plugins {\n    abort-deadline-ms 0\n}\n");
                load_err(sb.loader()).into_diagnostic()
            }),
        ),
        (
            "bool_as_string_in_file",
            Box::new(|| {
                sb.write_user("tui {\n    mouse \"yes\"\n}\n");
                load_err(sb.loader()).into_diagnostic()
            }),
        ),
        (
            "unknown_key_rejected",
            Box::new(|| {
                sb.write_user("net {\n    head-timeout 5\n}\n");
                load_err(sb.loader()).into_diagnostic()
            }),
        ),
        (
            "unknown_key_warned",
            Box::new(|| {
                sb.write_user("tui {\n    theem dark\n}\n");
                let config = sb.loader().load().unwrap();
                config.warnings()[0].clone()
            }),
        ),
        (
            "syntax_error",
            Box::new(|| {
                sb.write_user("tui {\n    theme \"dark\n}\n");
                load_err(sb.loader()).into_diagnostic()
            }),
        ),
        (
            // 100,000 levels overflow the parser's stack: refused before it.
            "nested_too_deep",
            Box::new(|| {
                let levels = 100_000;
                sb.write_user(&format!(
                    "model \"m\"\n{}{}",
                    "a {\n".repeat(levels),
                    "}\n".repeat(levels)
                ));
                load_err(sb.loader()).into_diagnostic()
            }),
        ),
        (
            "duplicate_key",
            Box::new(|| {
                sb.write_user("model a\nmodel b\n");
                load_err(sb.loader()).into_diagnostic()
            }),
        ),
        (
            "invalid_env",
            Box::new(|| {
                sb.write_user("");
                load_err(sb.loader().env([("SMITH_COLOR", "sometimes")])).into_diagnostic()
            }),
        ),
        (
            "near_miss_env_warned",
            Box::new(|| {
                sb.write_user("");
                let config = sb.loader().env([("SMITH_MODLE", "x")]).load().unwrap();
                config.warnings()[0].clone()
            }),
        ),
        (
            "invalid_flag",
            Box::new(|| {
                sb.write_user("");
                load_err(sb.loader().flag("--net-head-timeout-s", "2h")).into_diagnostic()
            }),
        ),
        (
            "unknown_flag",
            Box::new(|| {
                sb.write_user("");
                load_err(sb.loader().flag("--tui-them", "x")).into_diagnostic()
            }),
        ),
        (
            "relative_path",
            Box::new(|| {
                sb.write_user("session {\n    dir \"sessions\"\n}\n");
                load_err(sb.loader()).into_diagnostic()
            }),
        ),
        (
            "plugin_unknown_key",
            Box::new(|| {
                sb.write_user("");
                load_err(sb.loader().plugin_contribution(
                    "theme-pack",
                    "tui.colour",
                    Value::Str("x".into()),
                ))
                .into_diagnostic()
            }),
        ),
        (
            "untrusted_project_warned",
            Box::new(|| {
                sb.write_user("");
                sb.write_project("model \"project-model\"\n");
                let config = sb.loader().load().unwrap();
                config.warnings()[0].clone()
            }),
        ),
        (
            "set_unknown_key",
            Box::new(|| {
                smith_config::edit::parse_assignment("tui.theem", "dark")
                    .unwrap_err()
                    .into_diagnostic()
            }),
        ),
        (
            "set_invalid_value",
            Box::new(|| {
                smith_config::edit::parse_assignment("color", "sometimes")
                    .unwrap_err()
                    .into_diagnostic()
            }),
        ),
    ];
    for (name, make) in cases {
        let diag = make();
        assert!(diag.is_complete(), "{name}");
        let text = format!(
            "{}\n{}\n",
            diag.render_plain(),
            serde_json::to_string_pretty(&diag.to_json()).unwrap()
        );
        golden(name, &sb.normalize(&text));
    }
}

// ------------------------------------------------------------------- trust

#[test]
fn untrusted_project_config_is_ignored_with_a_warning_that_says_how_to_trust() {
    let sb = Sandbox::new();
    sb.write_project("model \"project-model\"\n");
    let config = sb.loader().load().unwrap();
    assert_eq!(config.get(&MODEL), None);
    assert_eq!(config.project().unwrap().1, &TrustStatus::Untrusted);
    let w = &config.warnings()[0];
    assert_eq!(w.code(), "trust.untrusted-project");
    assert!(w.next().contains("smith trust"), "{}", w.next());
}

#[test]
fn trusted_project_applies_until_anything_under_dot_smith_changes() {
    let sb = Sandbox::new();
    let project_file = sb.write_project("model \"project-model\"\n");
    sb.trust();
    let config = sb.loader().load().unwrap();
    assert_eq!(config.str(&MODEL), Some("project-model"));
    assert!(config.warnings().is_empty());
    assert_eq!(config.trusted_project(), Some(&sb.project()));

    // Changing the config file: untrusted again.
    fs::write(&project_file, "model \"evil\"\n").unwrap();
    let config = sb.loader().load().unwrap();
    assert_eq!(config.get(&MODEL), None);
    assert!(matches!(
        config.project().unwrap().1,
        TrustStatus::Changed { .. }
    ));
    assert!(
        config.warnings()[0]
            .what()
            .contains("changed since you trusted it")
    );

    // Re-trusting applies the new content.
    sb.trust();
    assert_eq!(sb.loader().load().unwrap().str(&MODEL), Some("evil"));

    // Adding a plugin file also needs trust again.
    fs::create_dir_all(sb.repo().join(".smith/plugins")).unwrap();
    fs::write(sb.repo().join(".smith/plugins/run.wasm"), b"\0asm").unwrap();
    let store = TrustStore::open(&sb.paths().trust_file()).unwrap();
    assert!(matches!(
        store.status(&sb.project()).unwrap(),
        TrustStatus::Changed { .. }
    ));
    assert_eq!(sb.loader().load().unwrap().get(&MODEL), None);
}

#[cfg(unix)]
#[test]
fn trust_store_is_private_and_records_path_and_digest() {
    use std::os::unix::fs::PermissionsExt as _;
    let sb = Sandbox::new();
    sb.write_project("model m\n");
    sb.trust();
    let path = sb.paths().trust_file();
    let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let store = TrustStore::open(&path).unwrap();
    assert_eq!(store.entries().len(), 1);
    assert_eq!(
        store.entries()[0].path,
        fs::canonicalize(sb.repo()).unwrap()
    );
    assert_eq!(store.entries()[0].digest, sb.project().digest().unwrap());
    assert!(store.entries()[0].digest.starts_with("sha256:"));
    // No temporary files are left behind.
    let names: Vec<_> = fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("trust.json")]);
    // Executable bits are part of the digest.
    let before = sb.project().digest().unwrap();
    let f = sb.repo().join(".smith/config.kdl");
    fs::set_permissions(&f, fs::Permissions::from_mode(0o755)).unwrap();
    assert_ne!(sb.project().digest().unwrap(), before);
}

#[cfg(unix)]
#[test]
fn the_trust_digest_streams_files_and_names_fifos_without_opening_them() {
    use std::os::unix::fs::PermissionsExt as _;
    let sb = Sandbox::new();
    let config = sb.write_project("model m\n");
    fs::set_permissions(&config, fs::Permissions::from_mode(0o644)).unwrap();
    // The format of a regular file's part is unchanged (records written
    // before still match): `smith-trust-v1`, then name, executable bit,
    // length and content.
    let before = sb.project().digest().unwrap();
    assert_eq!(
        before,
        "sha256:d1e503cb84dbf79699d8577a049a1688219d72d15a81318d872e3596cffd63a0"
    );
    // A FIFO is named by its kind, never opened (opening it would wait for
    // a writer forever).
    let fifo = sb.repo().join(".smith/pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let with_fifo = sb.project().digest().unwrap();
    assert_ne!(with_fifo, before);
    assert_eq!(sb.project().digest().unwrap(), with_fifo);
    sb.trust();
    let store = TrustStore::open(&sb.paths().trust_file()).unwrap();
    assert!(matches!(
        store.status(&sb.project()).unwrap(),
        TrustStatus::Trusted
    ));
}

#[cfg(unix)]
#[test]
fn a_configuration_file_that_is_a_fifo_or_huge_is_refused_unread() {
    let sb = Sandbox::new();
    let user = sb.paths().user_config_file();
    fs::create_dir_all(user.parent().unwrap()).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&user)
        .status()
        .unwrap();
    assert!(made.success());
    let err = load_err(sb.loader());
    let d = err.diagnostic();
    assert_eq!(d.code(), "config.not-a-file", "{d:?}");
    assert!(d.what().contains(&user.display().to_string()), "{d:?}");
    assert!(d.why().contains("a FIFO"), "{d:?}");
    fs::remove_file(&user).unwrap();
    // 17 MiB of nothing (a sparse file): refused by its size, not read.
    let file = fs::File::create(&user).unwrap();
    file.set_len(17 * 1024 * 1024).unwrap();
    let err = load_err(sb.loader());
    let d = err.diagnostic();
    assert_eq!(d.code(), "config.too-large", "{d:?}");
    assert!(d.why().contains("17825792 bytes"), "{d:?}");
    assert!(d.why().contains("at most 16777216 bytes"), "{d:?}");
}

#[test]
fn a_huge_file_under_dot_smith_is_never_read_before_trust_and_refused_at_trust() {
    let sb = Sandbox::new();
    sb.write_project("model m\n");
    // 4 GiB of nothing (a sparse file) in a cloned project's .smith.
    let big = sb.repo().join(".smith/big.bin");
    fs::File::create(&big)
        .unwrap()
        .set_len(4 * 1024 * 1024 * 1024)
        .unwrap();
    // Untrusted: nothing under .smith is digested, so nothing is read.
    let store = TrustStore::open(&sb.paths().trust_file()).unwrap();
    assert!(matches!(
        store.status(&sb.project()).unwrap(),
        TrustStatus::Untrusted
    ));
    // Trusting it is refused by the file's size, unread.
    let err = sb.project().digest().unwrap_err();
    let d = err.diagnostic();
    assert_eq!(d.code(), "trust.too-large", "{d:?}");
    assert!(d.what().contains(&big.display().to_string()), "{d:?}");
    assert!(d.why().contains("that file holds 4 GiB"), "{d:?}");
    assert!(d.why().contains("at most 256 MiB"), "{d:?}");
    assert!(d.next().contains("SMITH_INPUT_LIMIT_MIB"), "{d:?}");
    let mut store = TrustStore::open(&sb.paths().trust_file()).unwrap();
    assert!(store.trust(&sb.project()).is_err());
}

#[test]
fn revoking_trust_ignores_the_project_again() {
    let sb = Sandbox::new();
    sb.write_project("model m\n");
    sb.trust();
    let mut store = TrustStore::open(&sb.paths().trust_file()).unwrap();
    assert!(store.revoke(&sb.project()).unwrap());
    assert!(!store.revoke(&sb.project()).unwrap());
    assert_eq!(sb.loader().load().unwrap().get(&MODEL), None);
}

#[test]
fn project_search_stops_at_the_repository_root() {
    let sb = Sandbox::new();
    // A .smith above the repository is not this repository's project.
    fs::create_dir_all(sb.root().join(".smith")).unwrap();
    fs::write(sb.root().join(".smith/config.kdl"), "model outer\n").unwrap();
    assert_eq!(Project::discover(&sb.repo().join("src/deep"), None), None);
    sb.write_project("model inner\n");
    assert_eq!(
        Project::discover(&sb.repo().join("src/deep"), None),
        Some(sb.project())
    );
    // The home directory's own .smith is never a project.
    assert_eq!(Project::discover(sb.root(), Some(sb.root())), None);
    assert_eq!(
        Project::at(&sb.repo().join("src")).unwrap_err().kind(),
        ErrorKind::NotAProject
    );
}

#[test]
fn a_corrupt_trust_store_fails_closed_with_a_fix() {
    let sb = Sandbox::new();
    sb.write_project("model m\n");
    fs::create_dir_all(sb.paths().data_dir).unwrap();
    fs::write(sb.paths().trust_file(), "{not json").unwrap();
    let err = sb.loader().load().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Trust);
    assert!(err.diagnostic().next().contains("delete the file"));
}

// ------------------------------------------------------------- config set

#[test]
fn config_set_keeps_comments_and_formatting_of_the_file() {
    let sb = Sandbox::new();
    let original = "// My smith settings.\n\nmodel \"small\"   // cheap default\n\ntui {\n    // I like dark.\n    theme \"dark\"\n\n    confirm-exit #false /* rarely */\n}\n\n// trailing note\n";
    let path = sb.write_user(original);
    smith_config::edit::set_in_file(&path, &TUI_THEME, &Value::Str("light".into())).unwrap();
    smith_config::edit::set_in_file(&path, &NET_HEAD_TIMEOUT_S, &Value::Int(90)).unwrap();
    smith_config::edit::set_in_file(&path, &options::TUI_MOUSE, &Value::Bool(false)).unwrap();
    let expected = "// My smith settings.\n\nmodel \"small\"   // cheap default\n\ntui {\n    // I like dark.\n    theme light\n\n    confirm-exit #false /* rarely */\n    mouse #false\n}\n\nnet {\n    head-timeout-s 90\n}\n\n// trailing note\n";
    assert_eq!(fs::read_to_string(&path).unwrap(), expected);
    let config = sb.loader().load().unwrap();
    assert_eq!(config.str(&TUI_THEME), Some("light"));
    assert_eq!(config.int(&NET_HEAD_TIMEOUT_S), Some(90));
    assert_eq!(config.bool(&options::TUI_MOUSE), Some(false));
    assert_eq!(config.bool(&options::TUI_CONFIRM_EXIT), Some(false));
}

#[test]
fn config_set_refuses_to_rewrite_a_broken_file() {
    let sb = Sandbox::new();
    let path = sb.write_user("tui {\n    theme \"dark\n");
    let err = smith_config::edit::set_in_file(&path, &MODEL, &Value::Str("x".into())).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Parse);
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "tui {\n    theme \"dark\n"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Any sequence of `config set` edits leaves every comment in place and
    /// reads back as the last value set for each option.
    #[test]
    fn config_set_sequences_keep_comments_and_read_back(
        edits in proptest::collection::vec((0..options::ALL.len(), 0u32..1000), 1..8)
    ) {
        let base = "// head comment\nmodel \"a\" // model note\n\ntui {\n    /* block */ theme dark\n}\n// tail comment\n";
        let path = Path::new("/p/config.kdl");
        let mut text = base.to_owned();
        let mut expected = std::collections::BTreeMap::new();
        for (index, seed) in edits {
            let decl = options::ALL[index];
            let value = sample_value(decl, seed);
            text = smith_config::edit::set_in_text(&text, path, decl, &value).unwrap();
            expected.insert(decl.key, value);
        }
        for comment in ["// head comment", "// model note", "/* block */", "// tail comment"] {
            proptest::prop_assert!(text.contains(comment), "lost {comment} in:\n{text}");
        }
        let sb = Sandbox::new();
        sb.write_user(&text);
        let config = sb.loader().load().unwrap();
        proptest::prop_assert!(config.warnings().is_empty());
        for (key, value) in expected {
            proptest::prop_assert_eq!(config.entry(key).unwrap().value(), Some(&value));
        }
    }
}

/// A valid value for `decl` derived from `seed`.
fn sample_value(decl: &smith_config::options::OptionDecl, seed: u32) -> Value {
    use smith_config::options::Kind;
    match decl.kind {
        Kind::Bool => Value::Bool(seed.is_multiple_of(2)),
        Kind::Int { min, max } => Value::Int(min + i64::from(seed) % (max - min + 1)),
        Kind::Str => Value::Str(format!("v{seed} \"q\"")),
        Kind::Enum(choices) => Value::Str(choices[seed as usize % choices.len()].to_owned()),
        Kind::Path => Value::Str(format!("~/dir {seed}")),
        Kind::PathList => Value::Str(format!("~/dir {seed}:/srv/x{seed}")),
    }
}

#[test]
fn path_lists_split_at_colons_expand_home_and_refuse_relative_paths() {
    let sb = Sandbox::new();
    let config = sb
        .loader()
        .env([("SMITH_SANDBOX_WRITE_PATHS", "~/cache::/srv/data")])
        .load()
        .unwrap();
    let paths = config.path_list(&options::SANDBOX_WRITE_PATHS);
    assert_eq!(
        paths,
        [config.paths().expand("~/cache"), "/srv/data".into()],
        "empty entries are skipped, `~/` expands as for a path"
    );
    assert!(config.path_list(&options::SANDBOX_DENY_READ).is_empty());
    let err = load_err(
        sb.loader()
            .env([("SMITH_SANDBOX_DENY_READ", "/etc/x:relative")]),
    );
    let text = err.diagnostic().render_plain();
    assert!(text.contains("`relative` is neither"), "{text}");
}

// -------------------------------------------------------------------- docs

#[test]
fn docs_config_md_matches_the_option_declarations() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/config.md");
    let rendered = smith_config::docs::render_markdown();
    if std::env::var_os("SMITH_BLESS").is_some() {
        fs::write(&path, &rendered).unwrap();
        return;
    }
    let on_disk = fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == rendered,
        "docs/config.md is out of date with config/src/options.rs; run `SMITH_BLESS=1 cargo test -p smith-config`"
    );
    for decl in options::ALL {
        assert!(rendered.contains(&format!("### `{}`", decl.key)));
        assert!(rendered.contains(decl.env));
        assert!(rendered.contains(decl.flag));
    }
}

// ------------------------------------------------------------ diagnostics

#[test]
fn secrets_in_values_are_redacted_in_config_diagnostics() {
    smith_diag::secrets::register(TEST_SECRET);
    let sb = Sandbox::new();
    let err = load_err(sb.loader().env([("SMITH_NET_HEAD_TIMEOUT_S", TEST_SECRET)]));
    let text = err.diagnostic().render_plain();
    assert!(text.contains("value: [redacted]"), "{text}");
    assert!(!err.diagnostic().to_json().to_string().contains(TEST_SECRET));
}

#[test]
fn suite_audit_every_config_diagnostic_is_complete_and_secret_free() {
    if std::env::var_os("SMITH_DIAG_AUDIT_CHILD").is_some() {
        return;
    }
    let report = smith_diag::audit::audit_test_suite("suite_audit", &[TEST_SECRET]).unwrap();
    assert!(report.passed(), "{:#?}", report.problems);
    for code in [
        "config.invalid-value",
        "config.unknown-key",
        "config.parse",
        "config.duplicate",
        "config.unknown-flag",
        "config.unknown-env",
        "trust.untrusted-project",
        "trust.store-corrupt",
        "trust.not-a-project",
    ] {
        assert!(
            report.codes.contains_key(code),
            "no `{code}` in {:?}",
            report.codes
        );
    }
    assert!(report.redacted >= 1);
}

// ---------------------------------------------------------------- plugin options

fn plugin_option(plugin: &str, builtin: bool, key: &str) -> smith_config::plugin::PluginOption {
    smith_config::plugin::PluginOption {
        plugin: plugin.into(),
        builtin,
        key: key.into(),
        description: "A plugin's own option.".into(),
        schema: serde_json::json!({"type": "string"}),
        default: serde_json::json!("hello"),
    }
}

#[test]
fn plugins_declare_options_of_their_own() {
    let sb = Sandbox::new();
    let config = sb
        .loader()
        .plugin_option(plugin_option("test/kit", false, "kit.greeting"))
        .plugin_option(plugin_option("smith/extra", true, "extra.mode"))
        .plugin_option(plugin_option("acme/copy", false, "kit.greeting"))
        .plugin_option(plugin_option("acme/theme", false, "tui.theme"))
        .load()
        .unwrap();
    let keys: Vec<&str> = config
        .plugin_entries()
        .iter()
        .map(|e| e.option.key.as_str())
        .collect();
    assert_eq!(keys, ["kit.greeting", "extra.mode"]);
    let kit = config.plugin_entry("kit.greeting").unwrap();
    assert_eq!(
        kit.source(),
        Some(&Source::Plugin {
            plugin: "test/kit".into()
        })
    );
    assert_eq!(
        config.plugin_entry("extra.mode").unwrap().source(),
        Some(&Source::BuiltinPlugin {
            plugin: "smith/extra".into()
        })
    );
    assert_eq!(
        config.json_value("kit.greeting"),
        Some(serde_json::json!("hello"))
    );
    let warnings: Vec<String> = config
        .warnings()
        .iter()
        .map(|w| format!("{} {}", w.what(), w.why()))
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("acme/copy") && warnings[0].contains("test/kit"));
    assert!(warnings[1].contains("acme/theme") && warnings[1].contains("`tui.theme`"));
    let json = config.to_json(true);
    assert_eq!(json["plugin_options"][0]["plugin"], "test/kit");
    assert_eq!(
        json["plugin_options"][0]["sources"][0]["source"]["plugin"],
        "test/kit"
    );
}

#[test]
fn a_plugin_changes_only_its_own_options_and_only_in_memory() {
    let sb = Sandbox::new();
    let mut config = sb
        .loader()
        .plugin_option(plugin_option("test/kit", false, "kit.greeting"))
        .load()
        .unwrap();
    config
        .set_plugin_runtime("test/kit", "kit.greeting", serde_json::json!("hi"))
        .unwrap();
    let entry = config.plugin_entry("kit.greeting").unwrap();
    assert_eq!(entry.value(), Some(&serde_json::json!("hi")));
    assert_eq!(entry.layers.len(), 2);
    let err = config
        .set_plugin_runtime("acme/other", "kit.greeting", serde_json::json!("x"))
        .unwrap_err();
    let d = err.diagnostic();
    assert!(d.what().contains("acme/other") && d.why().contains("test/kit"));
    let err = config
        .set_plugin_runtime("test/kit", "kit.nope", serde_json::json!("x"))
        .unwrap_err();
    assert!(err.diagnostic().why().contains("`kit.nope`"));
    assert!(err.diagnostic().next().contains("declare"));
    // Without plugin options the JSON form is as before.
    let plain = sb.loader().load().unwrap();
    assert!(plain.to_json(false).get("plugin_options").is_none());
}
