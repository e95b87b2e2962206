//! The interface's own options: `tui.mouse` and `tui.theme`.

use smith_config::{Config, Loader, Paths};

use super::super::config::{tui_mouse, tui_theme};

fn with_env(vars: &[(&str, &str)]) -> (tempfile::TempDir, Config) {
    let home = tempfile::tempdir().unwrap();
    let config = Loader::new(Paths::under(home.path()))
        .env(vars.iter().copied())
        .load()
        .unwrap();
    (home, config)
}

#[test]
fn tui_mouse_follows_its_option() {
    let (_home, config) = with_env(&[]);
    assert!(tui_mouse(&config));
    let (_home, config) = with_env(&[("SMITH_TUI_MOUSE", "false")]);
    assert!(!tui_mouse(&config));
}

#[test]
fn a_known_theme_is_used_and_an_unknown_one_falls_back_with_a_warning() {
    let product = smith_tui::fixture::product();
    let (_home, config) = with_env(&[("SMITH_TUI_THEME", "default")]);
    let (theme, warning) = tui_theme(&config, &product);
    assert_eq!(theme, product.theme);
    assert!(warning.is_none());

    let (_home, config) = with_env(&[("SMITH_TUI_THEME", "solarized")]);
    let (theme, warning) = tui_theme(&config, &product);
    assert_eq!(theme, product.theme);
    let text = warning
        .expect("an unknown theme is warned about")
        .render_plain();
    assert!(text.starts_with("warning[config.unknown-theme]"), "{text}");
    assert!(text.contains("`solarized`"), "{text}");
    assert!(
        text.contains("environment variable SMITH_TUI_THEME"),
        "{text}"
    );
    assert!(text.contains("the themes there are: default"), "{text}");
}
