use super::*;

#[test]
fn trusting_in_the_interface_records_it_and_applies_the_project_configuration() {
    let (_tmp, dir, paths) = project_and_home();
    let root = std::fs::canonicalize(&dir).unwrap();
    let (before, failure, _) = load_options(loader(&paths, &dir), &smith_tui::fixture::product());
    assert!(failure.is_none());
    assert_eq!(before.scroll_lines, 3, "an untrusted project is ignored");
    assert!(before.confirm_exit);

    let question = trust_question(&paths, &dir).unwrap().unwrap();
    assert_eq!(
        question,
        Overlay::Trust {
            path: root.display().to_string(),
            changed: false,
            on_trust: false,
        }
    );
    let mut app = App::new(smith_tui::fixture::product(), before);
    app.open(question);
    let Some(Output::Trust { path, trust }) = press(&mut app, 't') else {
        panic!("t did not answer the trust question");
    };
    assert!(trust);
    answer_trust(&mut app, &paths, &path, trust, || loader(&paths, &dir));

    // Recorded in the same store `smith trust` uses.
    let store = TrustStore::open(&paths.trust_file()).unwrap();
    let project = Project::at(&root).unwrap();
    assert_eq!(store.status(&project).unwrap(), TrustStatus::Trusted);
    assert_eq!(store.entries().len(), 1);
    assert_eq!(store.entries()[0].path, root);
    // Configuration reloaded: the project's values apply now.
    assert_eq!(app.options().scroll_lines, 7);
    assert!(!app.options().confirm_exit);
    assert!(
        notices(&app)
            .iter()
            .any(|n| n.starts_with(&format!("trusted: {}", root.display())))
    );
    // Trusted and unchanged: nothing is asked at the next start.
    assert_eq!(trust_question(&paths, &dir).unwrap(), None);

    // A change to .smith asks again, saying it changed.
    std::fs::write(
        dir.join(".smith/config.kdl"),
        "tui {\n    scroll-lines 9\n}\n",
    )
    .unwrap();
    assert!(matches!(
        trust_question(&paths, &dir).unwrap(),
        Some(Overlay::Trust { changed: true, .. })
    ));
    let (changed, _, _) = load_options(loader(&paths, &dir), &smith_tui::fixture::product());
    assert_eq!(
        changed.scroll_lines, 3,
        "a changed project is ignored again"
    );
}

#[test]
fn not_now_leaves_the_project_untrusted_and_says_how_to_trust_it() {
    let (_tmp, dir, paths) = project_and_home();
    let root = std::fs::canonicalize(&dir).unwrap().display().to_string();
    let (before, _, _) = load_options(loader(&paths, &dir), &smith_tui::fixture::product());
    let mut app = App::new(smith_tui::fixture::product(), before);
    app.open(trust_question(&paths, &dir).unwrap().unwrap());
    let Some(Output::Trust { path, trust }) = press(&mut app, 'n') else {
        panic!("n did not answer the trust question");
    };
    assert!(!trust);
    answer_trust(&mut app, &paths, &path, trust, || {
        panic!("not now must not reload configuration")
    });
    assert_eq!(app.overlay(), &Overlay::None);
    assert!(!paths.trust_file().exists(), "nothing was recorded");
    assert_eq!(app.options(), before);
    assert_eq!(app.options().scroll_lines, 3);
    let shown = notices(&app);
    assert!(
        shown
            .iter()
            .any(|n| n.contains(&format!("`smith trust {root}`"))),
        "{shown:?}"
    );
    // Still untrusted: the next start asks again.
    assert!(matches!(
        trust_question(&paths, &dir).unwrap(),
        Some(Overlay::Trust { changed: false, .. })
    ));
}

#[test]
fn a_directory_without_a_project_asks_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let paths = Paths::under(tmp.path().join("home"));
    let dir = tmp.path().join("plain");
    std::fs::create_dir_all(&dir).unwrap();
    // A repository root stops the search before anything above it.
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    assert_eq!(trust_question(&paths, &dir).unwrap(), None);
}

#[test]
fn tool_arguments_are_summarized_on_one_line() {
    assert_eq!(
        summarize(&serde_json::json!({"command": "ls  -la\n  src"}), None),
        "ls -la src"
    );
    assert_eq!(
        summarize(&serde_json::json!({"path": "README.md"}), None),
        "README.md"
    );
    let long = "x ".repeat(100);
    assert_eq!(
        summarize(&serde_json::json!({ "command": long }), None)
            .chars()
            .count(),
        80
    );
    // The subject argument of the tool's presentation comes first.
    let grep = serde_json::json!({"path": "src", "pattern": "fn main"});
    assert_eq!(summarize(&grep, None), "src");
    assert_eq!(summarize(&grep, Some("pattern")), "fn main");
}
