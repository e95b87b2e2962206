use smith_plugins::builtin::BUILTINS;
use smith_plugins::extension::{Keybinding, Style, Theme};
use smith_plugins::{ExtensionComponent, Limits};
use smith_tui::product::{Action, LayoutSpec};

use super::*;

/// smith/product instantiated from the binary's embedded component.
fn smith_product() -> WasmExtension {
    let builtin = BUILTINS
        .iter()
        .find(|b| b.name == "smith/product")
        .expect("the binary carries smith/product");
    ExtensionComponent::load(builtin.name, builtin.component, None, Limits::default())
        .and_then(|c| c.instantiate())
        .expect("smith/product loads")
}

fn empty() -> Contributions {
    Contributions {
        commands: Vec::new(),
        keybindings: Vec::new(),
        themes: Vec::new(),
        layout: Vec::new(),
        prompt_fragments: Vec::new(),
        tools: Vec::new(),
        tool_presentations: Vec::new(),
        config: Vec::new(),
    }
}

fn style(name: &str, fg: &str) -> Style {
    Style {
        name: name.to_owned(),
        fg: Some(fg.to_owned()),
        bg: None,
        bold: false,
        dim: false,
        italic: false,
        underline: false,
        reverse: false,
    }
}

#[test]
fn smith_product_contributes_exactly_the_fixture() {
    let product = smith_product();
    let contributed = spec(
        product.name(),
        product.contributions().expect("read at load"),
    );
    // The fixture the interface's tests and benchmarks draw with cannot
    // drift from the plugin.
    assert_eq!(contributed, smith_tui::fixture::product_spec());
    let (built, errors) = build(&[product]);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(built, smith_tui::fixture::product());
    assert_eq!(built.layout, LayoutSpec::RECOVERY);
}

#[test]
fn a_user_plugin_s_theme_and_key_change_what_the_interface_uses() {
    let product = smith_product();
    let base = spec(
        product.name(),
        product.contributions().expect("read at load"),
    );
    let mut user = empty();
    user.themes = vec![Theme {
        name: "default".to_owned(),
        styles: vec![style("user", "#ff8000")],
    }];
    user.keybindings = vec![Keybinding {
        keys: "ctrl+t".to_owned(),
        action: "help".to_owned(),
        context: "global".to_owned(),
    }];
    let (p, errors) = Product::build(&[base, spec("example/colors", &user)]);
    assert!(errors.is_empty(), "{errors:?}");
    let fixture = smith_tui::fixture::product();
    assert_eq!(
        p.theme.user,
        smith_tui::style::Style::fg(smith_tui::style::Color::Rgb(255, 128, 0))
    );
    assert_eq!(p.theme.error, fixture.theme.error);
    let ctrl_t = p.keys.iter().find(|k| k.chord == "ctrl+t").expect("bound");
    assert_eq!(ctrl_t.action, Action::Help);
    assert_eq!(p.keys.len(), fixture.keys.len());
    assert_eq!(p.commands, fixture.commands);

    // The interface draws with it: the user message's marker takes the
    // plugin's color.
    let mut app = smith_tui::App::new(p, smith_tui::Options::default());
    app.user_message("hi");
    let mut screen = smith_tui::headless::Headless::new(app, 20, 6);
    let cell = *screen.frame().get(0, 0).expect("a cell");
    assert_eq!(
        cell.style.fg,
        smith_tui::style::Color::Rgb(255, 128, 0),
        "{cell:?}"
    );
}

#[test]
fn a_bad_contribution_is_reported_and_the_rest_is_used() {
    let product = smith_product();
    let base = spec(
        product.name(),
        product.contributions().expect("read at load"),
    );
    let mut user = empty();
    user.themes = vec![Theme {
        name: "default".to_owned(),
        styles: vec![style("user", "chartreuse"), style("error", "green")],
    }];
    user.keybindings = vec![Keybinding {
        keys: "ctrl+t".to_owned(),
        action: "launch-rockets".to_owned(),
        context: "global".to_owned(),
    }];
    let (p, errors) = Product::build(&[base, spec("example/bad", &user)]);
    let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(
        messages[0].starts_with(
            "plugin example/bad contributes the key binding \"ctrl+t\": there is no action \"launch-rockets\"; the accepted values are submit, "
        ),
        "{}",
        messages[0]
    );
    assert!(
        messages[1].starts_with("plugin example/bad contributes the style \"user\" of theme \"default\": the foreground color \"chartreuse\" is not a color; the accepted values are #rrggbb or one of black, red"),
        "{}",
        messages[1]
    );
    assert!(
        messages
            .iter()
            .all(|m| m.contains("smith plugin disable example/bad"))
    );
    let fixture = smith_tui::fixture::product();
    // The bad items are left out, the good one applies, the rest is the
    // product's.
    assert_eq!(p.theme.user, fixture.theme.user);
    assert_eq!(
        p.theme.error,
        smith_tui::style::Style::fg(smith_tui::style::Color::Indexed(2))
    );
    assert_eq!(p.keys, fixture.keys);
    assert_eq!(p.layout, fixture.layout);
}

#[test]
fn a_loaded_user_plugin_s_command_joins_the_product() {
    let wasm = std::path::Path::new(smith_plugins::GUEST_DIR).join("smith_plugin_hello.wasm");
    let bytes = std::fs::read(&wasm).expect("the example guest is built");
    let hello = ExtensionComponent::load("example/hello", &bytes, None, Limits::default())
        .and_then(|c| c.instantiate())
        .expect("example/hello loads");
    let (p, errors) = build(&[smith_product(), hello]);
    assert!(errors.is_empty(), "{errors:?}");
    let fixture = smith_tui::fixture::product();
    assert_eq!(p.commands[..fixture.commands.len()], fixture.commands[..]);
    let last = p.commands.last().expect("commands");
    assert_eq!(
        (last.name.as_str(), last.help.as_str(), last.usage.as_str()),
        ("hello", "Greet someone", "[NAME]")
    );
    assert_eq!(p.keys, fixture.keys);
    assert_eq!(p.theme, fixture.theme);
}

const LOADER_CHILD: &str = "SMITH_PRODUCT_LOADER_CHILD";
const LOADER_TEST: &str = "product::tests::the_loader_reads_user_plugins_and_disabled_built_ins";

/// The loader's half of the test below, run in a child process whose
/// `SMITH_HOME` the parent prepared.
fn loader_child(case: &str) {
    let (p, warnings) = load(case == "no-plugins");
    let fixture = smith_tui::fixture::product();
    let commands: Vec<&str> = p.commands.iter().map(|c| c.name.as_str()).collect();
    match case {
        "hello" => {
            assert!(warnings.is_empty(), "{warnings:?}");
            assert_eq!(commands.last(), Some(&"hello"));
            // smith/product's commands, smith/plan's `/plan` and `/normal`,
            // smith/permissions' `/approval`, smith/skills' `/skills`,
            // smith/mcp's `/mcp`, smith/todo's `/todo`, smith/hooks'
            // `/hooks`, smith/agents' `/agents`, then the user plugin's.
            assert_eq!(commands.len(), fixture.commands.len() + 9);
            for built_in in [
                "plan", "normal", "approval", "skills", "mcp", "todo", "hooks", "agents",
            ] {
                assert!(commands.contains(&built_in), "{commands:?}");
            }
            assert_eq!(p.keys, fixture.keys);
            assert_eq!(p.theme, fixture.theme);
            assert_eq!(p.layout, fixture.layout);
        }
        "no-plugins" => {
            // `--no-plugins`: only the built-ins contribute: smith/product
            // everything but `/approval` (smith/permissions'), `/skills` and
            // the `skill` tool's presentation (smith/skills'), `/mcp`
            // (smith/mcp's), `/todo` and the `todo_write` tool's
            // presentation (smith/todo's), `/plan`, `/normal` and the
            // `exit_plan_mode` tool's presentation (smith/plan's),
            // `/hooks` (smith/hooks'), `/agents` (smith/agents') and the
            // `web_fetch` and `web_search` tools' presentations (smith/web's).
            assert!(warnings.is_empty(), "{warnings:?}");
            let mut p = p;
            for (name, from) in [
                ("approval", "smith/permissions"),
                ("skills", "smith/skills"),
                ("mcp", "smith/mcp"),
                ("todo", "smith/todo"),
                ("plan", "smith/plan"),
                ("normal", "smith/plan"),
                ("hooks", "smith/hooks"),
                ("agents", "smith/agents"),
            ] {
                let at = p.commands.iter().position(|c| c.name == name);
                p.commands
                    .remove(at.unwrap_or_else(|| panic!("{from} contributes /{name}")));
            }
            let skill = p.tools.iter().position(|t| t.tool == "skill");
            p.tools
                .remove(skill.expect("smith/skills presents its `skill` tool"));
            let todo = p.tools.iter().position(|t| t.tool == "todo_write");
            p.tools
                .remove(todo.expect("smith/todo presents its `todo_write` tool"));
            let exit = p.tools.iter().position(|t| t.tool == "exit_plan_mode");
            p.tools
                .remove(exit.expect("smith/plan presents its `exit_plan_mode` tool"));
            for tool in ["web_fetch", "web_search"] {
                let at = p.tools.iter().position(|t| t.tool == tool);
                p.tools
                    .remove(at.unwrap_or_else(|| panic!("smith/web presents its `{tool}` tool")));
            }
            assert_eq!(p, fixture);
        }
        "disabled" => {
            // Without smith/product: the user plugin's command, the
            // recovery layout and keys, and a warning saying what to do.
            assert_eq!(
                commands,
                [
                    "plan", "normal", "approval", "skills", "agents", "mcp", "todo", "hooks",
                    "hello"
                ]
            );
            assert_eq!(p.layout, LayoutSpec::RECOVERY);
            let keys: Vec<&str> = p.keys.iter().map(|k| k.chord.as_str()).collect();
            assert_eq!(keys, ["enter", "esc", "ctrl+c"]);
            assert_eq!(warnings.len(), 1, "{warnings:?}");
            assert!(
                warnings[0].contains("no loaded plugin contributes a valid layout")
                    && warnings[0].contains("`smith plugin enable smith/product`"),
                "{}",
                warnings[0]
            );
        }
        other => panic!("unknown loader case {other}"),
    }
}

/// `load` reads the process's smith directories, so each case runs in a
/// child process of this test binary with its own `SMITH_HOME`: an
/// installed user plugin joins the product (not with `--no-plugins`); with
/// smith/product disabled
/// the interface falls back to its recovery layout and says why.
#[test]
fn the_loader_reads_user_plugins_and_disabled_built_ins() {
    if let Ok(case) = std::env::var(LOADER_CHILD) {
        loader_child(&case);
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let plugins = home.path().join("data").join("plugins");
    let hello = plugins.join("example").join("hello");
    std::fs::create_dir_all(&hello).unwrap();
    std::fs::write(
        hello.join("plugin.kdl"),
        "name \"example/hello\"\nversion \"0.1.0\"\ndescription \"Greets\"\napi 1\nworld \"extension\"\ncomponent \"plugin.wasm\"\n",
    )
    .unwrap();
    std::fs::copy(
        std::path::Path::new(smith_plugins::GUEST_DIR).join("smith_plugin_hello.wasm"),
        hello.join("plugin.wasm"),
    )
    .unwrap();
    let run = |case: &str| {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", LOADER_TEST, "--nocapture", "--test-threads=1"])
            .env(LOADER_CHILD, case)
            .env("SMITH_HOME", home.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "case {case}:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("1 passed"),
            "case {case} did not run the test"
        );
    };
    run("hello");
    run("no-plugins");
    std::fs::write(plugins.join("disabled.txt"), "smith/product\n").unwrap();
    run("disabled");
}
