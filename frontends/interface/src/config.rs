//! The interface's configuration and the project trust question: the
//! options the interface reads, the options that changed when a project
//! becomes trusted, and carrying out the answer to the question.

use std::path::Path;

use smith_config::Config;
use smith_config::options::{COLOR, TUI_CONFIRM_EXIT, TUI_MOUSE, TUI_SCROLL_LINES, TUI_THEME};
use smith_config::trust::{Project, TrustStatus, TrustStore};
use smith_config::{ConfigError, Loader, Paths};
use smith_diag::Diagnostic;
use smith_store::Store;
use smith_tui::{App, Options, Overlay, Product};

use super::host;

pub(super) fn open_store() -> anyhow::Result<Store> {
    Ok(Store::open(host::settings::session_root()?)?)
}

/// The interface options `loader` resolves, or the defaults and the error;
/// a warning when `tui.theme` names no theme (the default theme is used).
pub(super) fn load_options(
    loader: Result<Loader, ConfigError>,
    product: &Product,
) -> (Options, Option<ConfigError>, Option<Diagnostic>) {
    let mut options = Options::default();
    let mut failure = None;
    let mut warning = None;
    match loader.and_then(Loader::load) {
        Ok(config) => {
            options.mouse = host::settings::tui_mouse(&config);
            let (theme, unknown) = host::settings::tui_theme(&config, product);
            options.theme = Some(theme);
            warning = unknown;
            if let Some(confirm) = config.bool(&TUI_CONFIRM_EXIT) {
                options.confirm_exit = confirm;
            }
            if let Some(lines) = config.int(&TUI_SCROLL_LINES) {
                options.scroll_lines = u16::try_from(lines.clamp(1, 100)).unwrap_or(3);
            }
            options.color = config.str(&COLOR) != Some("never");
        }
        Err(err) => failure = Some(err),
    }
    options.color &= !smith_tui::term::no_color();
    (options, failure, warning)
}

/// The options whose value in effect differs between `before` and `after`
/// (set, unset or changed), in key order.
pub(super) fn changed_keys(
    before: &smith_config::Config,
    after: &smith_config::Config,
) -> Vec<&'static str> {
    let value = |config: &smith_config::Config, key: &str| {
        config.entry(key).and_then(|e| e.value()).cloned()
    };
    let mut keys: Vec<&'static str> = before
        .entries()
        .iter()
        .chain(after.entries())
        .map(|e| e.decl.key)
        .filter(|key| value(before, key) != value(after, key))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// The loader for the process, searching for the project from `cwd`.
pub(super) fn process_loader(cwd: &Path) -> Result<Loader, ConfigError> {
    Loader::from_process().map(|l| l.start_dir(cwd))
}

/// The trust question for the project containing `cwd`, when it has a
/// `.smith` directory that is not trusted as it is now.
///
/// # Errors
///
/// When the trust store cannot be read or the project cannot be digested.
pub(super) fn trust_question(paths: &Paths, cwd: &Path) -> Result<Option<Overlay>, ConfigError> {
    let Some(project) = Project::discover(cwd, paths.home.as_deref()) else {
        return Ok(None);
    };
    let changed = match TrustStore::open(&paths.trust_file())?.status(&project)? {
        TrustStatus::Trusted => return Ok(None),
        TrustStatus::Untrusted => false,
        TrustStatus::Changed { .. } => true,
    };
    Ok(Some(Overlay::Trust {
        path: project.root.display().to_string(),
        changed,
        on_trust: false,
    }))
}

/// Carries out the answer to the trust question about `path`: trusting
/// records it in the trust store and reloads the options from `loader`
/// (so the project's configuration applies); "not now" leaves the project
/// ignored and says how to trust it later.
pub(super) fn answer_trust(
    app: &mut App,
    paths: &Paths,
    path: &str,
    trust: bool,
    loader: impl FnOnce() -> Result<Loader, ConfigError>,
) {
    if !trust {
        app.notice(&format!(
            "not trusted: {path}; its .smith directory (configuration, plugins) is ignored. \
             Review it, then run `smith trust {path}` to use it."
        ));
        return;
    }
    let recorded = Project::at(Path::new(path)).and_then(|project| {
        TrustStore::open(&paths.trust_file())?.trust(&project)?;
        Ok(project)
    });
    match recorded {
        Ok(project) => {
            let (options, failure, warning) = load_options(loader(), app.product());
            app.set_options(options);
            if let Some(w) = warning {
                smith_diag::log::report(&w);
                app.error(&format!("{}: {}; {}", w.what(), w.why(), w.next()));
            }
            app.notice(&format!(
                "trusted: {path}; its configuration now applies. Any change under {} asks again.",
                project.smith_dir().display()
            ));
            if let Some(err) = failure {
                app.error(&format!(
                    "the project's configuration could not be applied: {err}"
                ));
            }
        }
        Err(err) => app.error(&format!(
            "could not trust {path}: {err}; it stays ignored. Run `smith trust {path}` to retry."
        )),
    }
}

/// Says that the project's trust could not be checked (so it is ignored).
pub(super) fn unchecked(app: &mut App, err: &ConfigError) {
    app.error(&format!(
        "the project's trust could not be checked, so it is ignored: {err}"
    ));
}

/// Whether the TUI captures the mouse: `tui.mouse`.
pub(super) fn tui_mouse(config: &Config) -> bool {
    config.bool(&TUI_MOUSE).unwrap_or(true)
}

/// The theme named by `tui.theme` among the themes the product provides,
/// or the product's `default` with a warning naming the value, where it
/// was set and the themes there are.
pub(super) fn tui_theme(
    config: &Config,
    product: &smith_tui::Product,
) -> (smith_tui::product::Theme, Option<Diagnostic>) {
    let themes = product.themes();
    let name = config.str(&TUI_THEME).unwrap_or(product.default_theme());
    if let Some((_, theme)) = themes.iter().find(|(n, _)| *n == name) {
        return (*theme, None);
    }
    let names: Vec<&str> = themes.iter().map(|(n, _)| *n).collect();
    let mut warning = Diagnostic::warning(
        "config.unknown-theme",
        format!("there is no theme `{name}`; the interface draws with `default`"),
        format!(
            "`tui.theme` names a theme no loaded plugin provides; the themes there are: {}",
            names.join(", ")
        ),
        format!(
            "set `tui.theme` to one of {}, e.g. `smith config set tui.theme default`",
            names.join(", ")
        ),
    )
    .with_value(name)
    .with_field(TUI_THEME.key);
    if let Some(source) = config.source(&TUI_THEME) {
        warning = warning.with_surface(source.surface());
    }
    (product.theme, Some(warning))
}
