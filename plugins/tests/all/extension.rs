//! smith/product and the example extension through the extension world.

use smith_plugins::extension::{
    Action, Decision, HandlerResult, IntentKind, LayoutKind, LifecycleEvent, ToolCallEvent,
    check_batch, decide,
};
use smith_plugins::{ExtensionComponent, Limits, WasmExtension};

use crate::guest;

fn product() -> WasmExtension {
    ExtensionComponent::load(
        "smith/product",
        smith_plugins::builtin::PRODUCT,
        None,
        Limits::default(),
    )
    .unwrap()
    .instantiate()
    .unwrap()
}

fn hello() -> WasmExtension {
    ExtensionComponent::load(
        "example/hello",
        &guest("smith_plugin_hello.wasm"),
        None,
        Limits::default(),
    )
    .unwrap()
    .instantiate()
    .unwrap()
}

#[test]
fn product_contributes_the_default_product() {
    let product = product();
    let c = product.contributions().expect("read at load");
    let commands: Vec<&str> = c.commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        commands,
        [
            "help",
            "model",
            "new",
            "resume",
            "continue",
            "branch",
            "compact",
            "replay",
            "undo",
            "redo",
            "rewind",
            "plugins",
            "jobs",
            "context",
            "search",
            "search-all",
            "copy",
            "thinking",
            "quit"
        ]
    );
    assert!(c.commands.iter().all(|c| !c.description.is_empty()));
    let tools: Vec<(&str, &str)> = c
        .tool_presentations
        .iter()
        .map(|p| (p.tool.as_str(), p.title.as_str()))
        .collect();
    assert_eq!(
        tools,
        [
            ("read", "read {path}"),
            ("write", "write {path}"),
            ("edit", "edit {path}"),
            ("bash", "bash {command}"),
            ("find", "find {pattern}"),
            ("grep", "grep {pattern}"),
            ("ls", "ls {path}")
        ]
    );
    assert_eq!(c.layout[0].kind, LayoutKind::Column);
    let regions: Vec<(&str, Option<u32>)> = c.layout[0]
        .children
        .iter()
        .map(|&i| {
            (
                c.layout[i as usize].name.as_str(),
                c.layout[i as usize].size,
            )
        })
        .collect();
    assert_eq!(
        regions,
        [
            ("transcript", None),
            ("status", Some(1)),
            ("editor", Some(9))
        ]
    );
    assert_eq!(c.themes.len(), 1);
    assert_eq!(c.themes[0].name, "default");
    let roles: Vec<&str> = c.themes[0].styles.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "thinking",
            "tool",
            "tool-output",
            "tool-error",
            "error",
            "notice",
            "status",
            "prompt",
            "popup",
            "selected",
            "match",
            "current-match",
            "border"
        ]
    );
    let selected = &c.themes[0].styles[11];
    assert!(selected.reverse && !selected.underline && selected.fg.is_none());
    assert!(c.themes[0].styles[12].underline);
    assert_eq!(c.keybindings.len(), 22);
    assert!(
        c.keybindings
            .iter()
            .any(|k| k.keys == "esc" && k.action == "interrupt" && k.context == "global")
    );
    assert!(
        c.keybindings
            .iter()
            .any(|k| k.keys == "ctrl+p" && k.action == "model-picker")
    );
}

#[test]
fn product_commands_return_actions_or_say_who_runs_them() {
    let mut product = product();
    assert_eq!(
        product.run_command("model", " mock-1 ").unwrap(),
        vec![Action::SetModel("mock-1".into())]
    );
    let help = product.run_command("help", "").unwrap();
    let [Action::Ui(intent)] = help.as_slice() else {
        panic!("help is one notify intent: {help:?}")
    };
    let IntentKind::Notify(text) = &intent.kind else {
        panic!("{intent:?}")
    };
    assert!(
        text.contains("\n  /quit - exit smith")
            && text.contains("\n  /compact [INSTRUCTIONS] - compact the context"),
        "{text}"
    );
    for host_run in ["quit", "continue", "search", "copy", "thinking"] {
        let err = product.run_command(host_run, "").unwrap_err();
        assert!(err.message.contains("carried out by the host"), "{err}");
    }
    let err = product.run_command("quit", "").unwrap_err();
    assert!(err.message.contains("carried out by the host"), "{err}");
    let err = product.run_command("nope", "").unwrap_err();
    assert_eq!(err.plugin, "smith/product");
    assert!(err.to_string().contains("(call run-command)"), "{err}");
}

#[test]
fn the_example_greets_and_blocks_a_dangerous_call() {
    let mut hello = hello();
    let actions = hello.run_command("hello", "Ada").unwrap();
    assert!(
        matches!(&actions[0], Action::Ui(intent) if intent.kind == IntentKind::Notify("Hello, Ada!".into()))
    );
    let dangerous = LifecycleEvent::ToolCall(ToolCallEvent {
        id: "c1".into(),
        name: "bash".into(),
        arguments: r#"{"command":"rm -rf /"}"#.into(),
    });
    assert_eq!(
        hello.handle(&dangerous).unwrap(),
        HandlerResult::Decision(Decision::Block(
            "example/hello refuses to run rm -rf /".into()
        ))
    );
    assert_eq!(
        hello.handle(&LifecycleEvent::AgentStart).unwrap(),
        HandlerResult::None
    );
}

#[test]
fn decisions_fold_in_load_order_and_a_block_wins() {
    let mut handlers = vec![product(), hello()];
    let dangerous = LifecycleEvent::ToolCall(ToolCallEvent {
        id: "c1".into(),
        name: "bash".into(),
        arguments: r#"{"command":"rm -rf /"}"#.into(),
    });
    let (folded, errors) = decide(&mut handlers, &dangerous);
    assert!(errors.is_empty());
    assert_eq!(
        folded,
        smith_plugins::extension::Folded::Block {
            plugin: "example/hello".into(),
            reason: "example/hello refuses to run rm -rf /".into()
        }
    );
    let (folded, _) = decide(&mut handlers, &LifecycleEvent::Input("hi".into()));
    assert_eq!(
        folded,
        smith_plugins::extension::Folded::Allow { replacement: None }
    );
}

#[test]
fn conflicting_actions_reject_the_batch_naming_plugins_and_field() {
    let batch = vec![
        ("a/one".to_owned(), Action::SetModel("x".into())),
        ("b/two".to_owned(), Action::SendMessage("hi".into())),
        ("c/three".to_owned(), Action::SetModel("y".into())),
    ];
    let err = check_batch(&batch).unwrap_err();
    assert!(
        err.contains("a/one") && err.contains("c/three") && err.contains("model"),
        "{err}"
    );
    assert!(check_batch(&batch[..2]).is_ok());
}

/// A handler's result keeps as many UI intents as its cap per run has
/// room for, in the plugin's order, and every other action; the rest are
/// counted as dropped, never lifted (`smith_plugins::capped`).
#[test]
fn a_handler_result_keeps_the_ui_intents_that_fit_and_every_other_action() {
    let limits = Limits {
        rate: smith_plugins::rate::RateLimits {
            ui_intents: 7,
            ..smith_plugins::rate::RateLimits::DEFAULT
        },
        ..Limits::default()
    };
    let mut plugin = ExtensionComponent::load(
        "test/lifecycle",
        &guest("smith_plugin_lifecycle.wasm"),
        None,
        limits,
    )
    .unwrap()
    .instantiate()
    .unwrap();
    let budget = plugin.budget().unwrap();
    // Two of the room taken before: five left.
    assert!(budget.admit(smith_plugins::rate::Kind::Ui, 2));
    assert_eq!(
        plugin
            .handle(&LifecycleEvent::Input("mixed flood".to_owned()))
            .unwrap(),
        HandlerResult::None
    );
    let HandlerResult::Actions(actions) = plugin
        .handle(&LifecycleEvent::BeforeProviderRequest("m".to_owned()))
        .unwrap()
    else {
        panic!("the flood returns actions")
    };
    let shown: Vec<String> = actions
        .iter()
        .map(|action| match action {
            Action::Ui(intent) => match &intent.kind {
                IntentKind::Notify(text) => text.clone(),
                other => panic!("{other:?}"),
            },
            Action::SetTheme(theme) => theme.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    let mut expected: Vec<String> = (0..5).map(|n| format!("flood {n}")).collect();
    expected.extend((0..10).map(|n| format!("theme {}", n * 100 + 99)));
    assert_eq!(shown, expected);
    // The 995 over the room are counted as dropped; the five kept count
    // when the dispatcher admits them.
    assert_eq!(
        budget.take_drops(),
        [smith_plugins::rate::Dropped {
            kind: smith_plugins::rate::Kind::Ui,
            limit: 7,
            dropped: 995,
        }]
    );
    assert_eq!(budget.room(smith_plugins::rate::Kind::Ui), 5);
}
