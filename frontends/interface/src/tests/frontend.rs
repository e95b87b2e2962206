use super::*;

#[test]
fn plugin_lines_reach_the_interface_tagged_with_their_runtime() {
    use smith_plugins::dispatch::Surface as _;
    use smith_plugins::extension::{IntentKind, IntentPolicy, UiIntent};
    use smith_plugins::hooks::Frontend as _;
    let (tx, rx) = sync_channel::<AgentMsg>(8);
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let session = store.create(Some("kept")).unwrap();
    let journal = Arc::new(StoreJournal::new(store, session));
    let mut frontend = TuiFrontend {
        tx,
        generation: 3,
        journal: Some(Arc::clone(&journal)),
    };
    let notify = IntentKind::Notify("build passed".to_owned());
    let confirm = IntentKind::Confirm("Deploy?".to_owned());
    let progress = IntentKind::Progress(("indexing".to_owned(), 425));
    assert!(frontend.can_show(&notify));
    assert!(frontend.can_show(&confirm));
    assert!(!frontend.can_show(&progress));
    frontend.show(
        "example/ci",
        &UiIntent {
            id: "n1".to_owned(),
            kind: notify,
            policy: IntentPolicy::Drop,
        },
    );
    frontend.show(
        "example/ci",
        &UiIntent {
            id: "q0".to_owned(),
            kind: confirm,
            policy: IntentPolicy::Drop,
        },
    );
    frontend.show_text("example/ci", "Deploy? [yes / no]");
    frontend.diagnostic("plugin example/ci (call handle): it trapped");
    frontend.persist(
        "example/ci",
        &UiIntent {
            id: "q1".to_owned(),
            kind: progress,
            policy: IntentPolicy::Persist,
        },
    );
    let got: Vec<String> = rx
        .try_iter()
        .map(|msg| match msg {
            Msg::Agent((3, Some(Feed::Notice(text)))) => format!("notice {text}"),
            Msg::Agent((3, Some(Feed::Problem(text)))) => format!("problem {text}"),
            Msg::Agent((3, Some(Feed::Question(plugin, intent)))) => {
                format!("question {plugin} {}", intent.id)
            }
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        got,
        [
            "notice [example/ci] build passed",
            "question example/ci q0",
            "notice [example/ci] Deploy? [yes / no]",
            "problem plugin example/ci (call handle): it trapped",
            "notice [example/ci] indexing: 42.5% (this interface cannot ask it; kept in the session)",
        ]
    );
    // Kept in the session: an interface that opens it shows it.
    let mut app = App::new(smith_tui::fixture::product(), Options::default());
    journal.with_session(|session| show_kept_intents(&mut app, session));
    assert_eq!(
        notices(&app),
        ["[example/ci] indexing: 42.5% (kept from tui)"]
    );
}

#[test]
fn changed_keys_are_the_options_whose_value_in_effect_differs() {
    let home = tempfile::tempdir().unwrap();
    let load = |vars: &[(&str, &str)]| {
        Loader::new(smith_config::Paths::under(home.path()))
            .env(vars.iter().copied())
            .load()
            .unwrap()
    };
    let before = load(&[("SMITH_MODEL", "a"), ("SMITH_COLOR", "never")]);
    let after = load(&[
        ("SMITH_MODEL", "b"),
        ("SMITH_COLOR", "never"),
        ("SMITH_LOG_LEVEL", "debug"),
    ]);
    assert_eq!(changed_keys(&before, &after), ["log.level", "model"]);
    assert!(changed_keys(&after, &after).is_empty());
}

#[test]
fn a_question_overlay_answers_its_runtime_plugin_and_id() {
    use smith_plugins::extension::{IntentKind, IntentPolicy, UiIntent};
    let intent = UiIntent {
        id: "deploy-1".to_owned(),
        kind: IntentKind::Select(("Target?".to_owned(), vec!["a".to_owned(), "b".to_owned()])),
        policy: IntentPolicy::Refuse,
    };
    let Some(Overlay::Picker(picker)) = question_overlay(7, "example/ci", &intent) else {
        panic!("a select intent is asked as a list");
    };
    assert_eq!(picker.title, "[example/ci] Target?");
    assert_eq!(
        answered(&picker.command),
        Some((7, "example/ci", "deploy-1"))
    );
    // A typed command is never taken for an answer.
    assert_eq!(answered("answer"), None);
    let notify = UiIntent {
        kind: IntentKind::Notify("hi".to_owned()),
        ..intent
    };
    assert!(question_overlay(7, "example/ci", &notify).is_none());
}
