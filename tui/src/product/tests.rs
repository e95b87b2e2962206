use super::*;
use crate::fixture::product_spec;

fn spec(plugin: &str) -> ProductSpec {
    ProductSpec {
        plugin: plugin.to_owned(),
        ..ProductSpec::default()
    }
}

fn key(keys: &str, action: &str) -> KeySpec {
    KeySpec {
        keys: keys.to_owned(),
        action: action.to_owned(),
        context: "global".to_owned(),
    }
}

fn style(name: &str, fg: Option<&str>) -> StyleSpec {
    StyleSpec {
        name: name.to_owned(),
        fg: fg.map(str::to_owned),
        ..StyleSpec::default()
    }
}

fn theme(name: &str, styles: Vec<StyleSpec>) -> ThemeSpec {
    ThemeSpec {
        name: name.to_owned(),
        styles,
    }
}

fn action_of(p: &Product, chord: &str) -> Option<Action> {
    p.keys.iter().find(|k| k.chord == chord).map(|k| k.action)
}

#[test]
fn the_fixture_is_the_interface_s_presentation() {
    let p = Product::from_spec(&product_spec()).unwrap();
    assert_eq!(p.layout, LayoutSpec::RECOVERY);
    let fg = |n| Style::fg(Color::Indexed(n));
    assert_eq!(
        p.theme,
        Theme {
            user: fg(6).attrs(Attrs::BOLD),
            assistant: Style::PLAIN,
            thinking: fg(8).attrs(Attrs::ITALIC),
            tool: fg(3),
            tool_output: fg(8),
            tool_error: fg(1),
            error: fg(1).attrs(Attrs::BOLD),
            notice: fg(8),
            status: Style::PLAIN.attrs(Attrs::REVERSE),
            prompt: fg(6).attrs(Attrs::BOLD),
            popup: Style::PLAIN,
            selected: Style::PLAIN.attrs(Attrs::REVERSE),
            matched: Style::PLAIN.attrs(Attrs::UNDERLINE),
            current_match: Style::PLAIN.attrs(Attrs::REVERSE),
            border: fg(8),
        }
    );
    assert_eq!(p.themes(), vec![("default", p.theme)]);
    let keys: Vec<(&str, &str)> = p
        .keys
        .iter()
        .map(|k| (k.chord.as_str(), k.action.name()))
        .collect();
    assert_eq!(
        keys,
        [
            ("enter", "submit"),
            ("alt+enter", "queue-follow-up"),
            ("shift+enter", "newline"),
            ("ctrl+j", "newline"),
            ("esc", "interrupt"),
            ("ctrl+c", "clear-or-exit"),
            ("shift+up", "scroll-up"),
            ("shift+down", "scroll-down"),
            ("pageup", "page-up"),
            ("pagedown", "page-down"),
            ("ctrl+home", "top"),
            ("ctrl+end", "latest"),
            ("ctrl+g", "latest"),
            ("ctrl+f", "search"),
            ("f1", "help"),
            ("ctrl+t", "toggle-details"),
            ("ctrl+o", "toggle-entry"),
            ("ctrl+y", "copy"),
            ("alt+up", "select-prev"),
            ("alt+down", "select-next"),
            ("ctrl+p", "model-picker"),
            ("ctrl+r", "session-picker"),
        ]
    );
    let commands: Vec<&str> = p.commands.iter().map(|c| c.name.as_str()).collect();
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
    let bash = p.tool("bash").unwrap();
    assert_eq!(bash.title_line("ls -la"), "bash ls -la");
    assert_eq!(bash.title_line(""), "bash");
    assert_eq!(bash.preview_lines, 6);
    assert_eq!(p.tools.len(), 7);
}

#[test]
fn every_action_and_role_has_a_distinct_name() {
    for (i, (name, action)) in Action::ALL.iter().enumerate() {
        assert_eq!(action.name(), *name);
        assert!(
            Action::ALL[i + 1..]
                .iter()
                .all(|(n, a)| n != name && a != action)
        );
    }
    let mut t = Theme::PLAIN;
    for (i, s) in t.roles_mut().into_iter().enumerate() {
        *s = Style::fg(Color::Indexed(u8::try_from(i).unwrap()));
    }
    for (i, role) in ROLES.iter().enumerate() {
        assert_eq!(
            t.role(role),
            Some(Style::fg(Color::Indexed(u8::try_from(i).unwrap())))
        );
    }
    assert_eq!(t.role("nope"), None);
}

#[test]
fn a_plugin_with_only_a_theme_overlays_those_roles() {
    let mut user = spec("example/colors");
    user.themes = vec![
        theme("default", vec![style("user", Some("#ff8000"))]),
        theme("night", vec![style("error", Some("magenta"))]),
    ];
    let base = Product::from_spec(&product_spec()).unwrap();
    let (p, errors) = Product::build(&[product_spec(), user]);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(p.theme.user, Style::fg(Color::Rgb(255, 128, 0)));
    // Every other role and everything else stays the product's.
    assert_eq!(
        Theme {
            user: base.theme.user,
            ..p.theme
        },
        base.theme
    );
    assert_eq!(p.keys, base.keys);
    assert_eq!(p.commands, base.commands);
    assert_eq!(p.layout, base.layout);
    // A new theme takes the roles it does not set from `default`.
    let night = p.theme_named("night").unwrap();
    assert_eq!(night.error, Style::fg(Color::Indexed(5)));
    assert_eq!(
        Theme {
            error: p.theme.error,
            ..night
        },
        p.theme
    );
    assert_eq!(
        p.themes().iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        ["default", "night"]
    );
}

#[test]
fn later_bindings_commands_and_tools_replace_earlier_ones_in_place() {
    let mut user = spec("example/keys");
    user.keys = vec![key("ctrl+t", "help"), key("ctrl+k", "copy")];
    user.commands = vec![CommandSpec {
        name: "model".to_owned(),
        description: "pick a model".to_owned(),
        usage: String::new(),
        complete: "models".to_owned(),
    }];
    user.tools = vec![ToolSpec {
        tool: "bash".to_owned(),
        title: "$ {command}".to_owned(),
        subject_argument: Some("command".to_owned()),
        result_style: "code".to_owned(),
        preview_lines: 3,
    }];
    let base = Product::from_spec(&product_spec()).unwrap();
    let (p, errors) = Product::build(&[product_spec(), user]);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(action_of(&p, "ctrl+t"), Some(Action::Help));
    let at = |p: &Product, chord: &str| p.keys.iter().position(|k| k.chord == chord);
    assert_eq!(at(&p, "ctrl+t"), at(&base, "ctrl+t"));
    assert_eq!(p.keys.last().map(|k| k.chord.as_str()), Some("ctrl+k"));
    assert_eq!(p.keys.len(), base.keys.len() + 1);
    assert_eq!(p.commands[1].help, "pick a model");
    assert_eq!(p.commands.len(), base.commands.len());
    assert_eq!(p.tool("bash").unwrap().title_line("ls"), "$ ls");
    assert_eq!(p.tool("bash").unwrap().preview_lines, 3);
}

fn only_error(errors: &[ProductError]) -> &ProductError {
    assert_eq!(errors.len(), 1, "{errors:?}");
    &errors[0]
}

#[test]
fn a_bad_key_is_left_out_with_its_plugin_item_and_the_accepted_values() {
    let mut user = spec("example/keys");
    user.keys = vec![key("ctrl+t", "explode"), key("ctrl+k", "copy")];
    let (p, errors) = Product::build(&[product_spec(), user.clone()]);
    let e = only_error(&errors);
    assert_eq!(e.plugin, "example/keys");
    assert_eq!(e.item, "the key binding \"ctrl+t\"");
    assert!(e.problem.contains("\"explode\""), "{e}");
    assert!(e.accepted.contains("submit, queue-follow-up"), "{e}");
    assert!(e.accepted.contains("session-picker"), "{e}");
    let text = e.to_string();
    assert!(text.contains("smith plugin disable example/keys"), "{text}");
    assert!(e.to_diagnostic().is_complete());
    // The product's binding stays; the plugin's valid binding applies.
    assert_eq!(action_of(&p, "ctrl+t"), Some(Action::ToggleDetails));
    assert_eq!(action_of(&p, "ctrl+k"), Some(Action::Copy));

    user.keys = vec![key("hyper+x", "copy")];
    let (_, errors) = Product::build(&[product_spec(), user.clone()]);
    let e = only_error(&errors);
    assert!(e.problem.contains("\"hyper+x\""), "{e}");
    assert!(e.accepted.contains("ctrl, alt, shift"), "{e}");
    for bad in ["", "ctrl+", "f0", "f25", "ctrl+xy"] {
        assert_eq!(parse_chord(bad), None, "{bad}");
    }
    user.keys = vec![KeySpec {
        context: "overlay".to_owned(),
        ..key("ctrl+k", "copy")
    }];
    let (_, errors) = Product::build(&[product_spec(), user]);
    let e = only_error(&errors);
    assert_eq!(e.accepted, "editor, transcript, global");
}

#[test]
fn a_bad_style_is_left_out_and_the_rest_of_the_theme_applies() {
    let mut user = spec("example/colors");
    user.themes = vec![theme(
        "default",
        vec![
            style("usr", Some("red")),
            style("error", Some("crimson")),
            style("notice", Some("#12345g")),
            style("user", Some("green")),
        ],
    )];
    let (p, errors) = Product::build(&[product_spec(), user]);
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert_eq!(errors[0].item, "the style \"usr\" of theme \"default\"");
    assert!(errors[0].accepted.contains("tool-output"), "{}", errors[0]);
    assert!(errors[1].problem.contains("\"crimson\""), "{}", errors[1]);
    assert!(
        errors[1]
            .accepted
            .starts_with("#rrggbb or one of black, red")
    );
    assert!(errors[2].problem.contains("\"#12345g\""), "{}", errors[2]);
    let base = Product::from_spec(&product_spec()).unwrap();
    assert_eq!(p.theme.error, base.theme.error);
    assert_eq!(p.theme.notice, base.theme.notice);
    assert_eq!(p.theme.user, Style::fg(Color::Indexed(2)));
}

fn region(name: &str, size: Option<u32>) -> NodeSpec {
    NodeSpec {
        kind: NodeKind::Region,
        name: name.to_owned(),
        size,
        weight: 1,
        children: Vec::new(),
    }
}

fn column(children: Vec<u32>) -> NodeSpec {
    NodeSpec {
        kind: NodeKind::Column,
        name: "root".to_owned(),
        size: None,
        weight: 1,
        children,
    }
}

#[test]
fn a_layout_orders_and_sizes_the_regions() {
    let mut user = spec("example/layout");
    user.layout = vec![
        column(vec![1, 2, 3]),
        region("status", Some(2)),
        region("transcript", None),
        region("editor", Some(4)),
    ];
    let (p, errors) = Product::build(&[product_spec(), user]);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        p.layout.regions,
        [
            (Region::Status, Size::Fixed(2)),
            (Region::Transcript, Size::Fill),
            (Region::Input, Size::Content { min: 2, max: 4 }),
        ]
    );
}

#[test]
fn a_bad_layout_is_left_out_and_the_earlier_one_stays() {
    let cases: Vec<(Vec<NodeSpec>, &str)> = vec![
        (
            vec![
                column(vec![1, 2, 3]),
                region("transcript", None),
                region("status", Some(1)),
                region("footer", Some(1)),
            ],
            "there is no region \"footer\"",
        ),
        (
            vec![
                NodeSpec {
                    kind: NodeKind::Row,
                    ..column(vec![1])
                },
                region("transcript", None),
            ],
            "is a row",
        ),
        (
            vec![
                column(vec![1, 2]),
                region("transcript", None),
                region("editor", Some(3)),
            ],
            "lacks the region(s) status",
        ),
        (
            vec![column(vec![1, 7]), region("transcript", None)],
            "child 7",
        ),
        (
            vec![
                column(vec![1, 2, 3]),
                region("transcript", None),
                region("status", Some(1)),
                region("editor", Some(1)),
            ],
            "less than its 2 rows",
        ),
    ];
    for (layout, problem) in cases {
        let mut user = spec("example/layout");
        user.layout = layout;
        let (p, errors) = Product::build(&[product_spec(), user]);
        let e = only_error(&errors);
        assert_eq!(e.item, "its layout");
        assert!(e.problem.contains(problem), "{problem}: {e}");
        assert!(
            e.accepted.contains("transcript") && e.accepted.contains("editor"),
            "{e}"
        );
        assert_eq!(p.layout, LayoutSpec::RECOVERY);
    }
}

#[test]
fn bad_commands_and_tool_presentations_are_left_out() {
    let mut user = spec("example/tools");
    user.commands = vec![CommandSpec {
        name: "two words".to_owned(),
        complete: "none".to_owned(),
        ..CommandSpec::default()
    }];
    user.tools = vec![
        ToolSpec {
            tool: "bash".to_owned(),
            title: "$ {command}".to_owned(),
            subject_argument: Some("command".to_owned()),
            result_style: "fancy".to_owned(),
            preview_lines: 3,
        },
        ToolSpec {
            tool: "read".to_owned(),
            title: "read {file}".to_owned(),
            subject_argument: Some("path".to_owned()),
            result_style: "code".to_owned(),
            preview_lines: 3,
        },
    ];
    let (p, errors) = Product::build(&[product_spec(), user]);
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(errors[0].problem.contains("\"two words\""));
    assert_eq!(errors[1].accepted, "text, diff, listing, code");
    assert!(errors[2].problem.contains("{file}"), "{}", errors[2]);
    assert_eq!(
        errors[2].accepted,
        "the placeholder {path} (its subject argument) or none"
    );
    assert_eq!(p.tool("bash").unwrap().title, "bash {command}");
    assert_eq!(p.tool("read").unwrap().title, "read {path}");
}

#[test]
fn without_any_contribution_the_interface_can_still_be_entered_and_left() {
    let (p, errors) = Product::build(&[]);
    let e = only_error(&errors);
    assert_eq!(e.item, "no layout");
    assert!(
        e.to_string()
            .contains("Next: enable smith/product (`smith plugin enable smith/product`"),
        "{e}"
    );
    assert!(e.to_diagnostic().is_complete());
    assert_eq!(p.layout, LayoutSpec::RECOVERY);
    assert_eq!(p.theme, Theme::PLAIN);
    let keys: Vec<(&str, Action)> = p
        .keys
        .iter()
        .map(|k| (k.chord.as_str(), k.action))
        .collect();
    assert_eq!(
        keys,
        [
            ("enter", Action::Submit),
            ("esc", Action::Interrupt),
            ("ctrl+c", Action::ClearOrExit)
        ]
    );
    assert!(p.commands.is_empty());
    // A product that binds them elsewhere gets no extra bindings.
    let mut other = spec("example/keys");
    other.keys = vec![
        key("ctrl+s", "submit"),
        key("ctrl+x", "interrupt"),
        key("ctrl+q", "clear-or-exit"),
    ];
    let (p, _) = Product::build(&[other]);
    assert_eq!(p.keys.len(), 3);
}
