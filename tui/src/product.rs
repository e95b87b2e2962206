//! The product's presentation: screen layout, themes, key bindings,
//! commands and tool presentation, built from what extension plugins
//! contribute.
//!
//! The interface owns no presentation data. Each plugin's contribution is
//! described as plain data by a [`ProductSpec`] (the host converts the
//! plugin's `contributions` record into one); [`Product::build`] validates
//! the descriptions against the small vocabulary below and overlays them
//! in load order (smith/product first, then user and project plugins):
//!
//! * key bindings by chord, commands by name, tool presentations by tool
//!   and theme styles by theme and role: a later plugin's item replaces an
//!   earlier one with the same key, new items are added;
//! * the layout as a whole: the last valid layout wins.
//!
//! An invalid item (an unknown action, role, region, color, context or
//! result style, a malformed chord, an impossible layout) is left out with
//! a [`ProductError`] naming the plugin, the item and the accepted values;
//! the rest still applies. The result is built once when the interface
//! starts and cached: the render path only reads it and never calls into
//! a plugin.
//!
//! Vocabulary (also in docs/tui.md and docs/plugins.md):
//!
//! * regions: `transcript`, `status`, `editor` ([`REGIONS`]);
//! * actions: [`Action::ALL`] by [`Action::name`];
//! * key contexts: `editor`, `transcript`, `global`;
//! * theme roles: [`ROLES`];
//! * colors: the sixteen palette names of [`COLORS`] or `#rrggbb`;
//! * tool result styles: `text`, `diff`, `listing`, `code`;
//! * command completion sources: [`COMPLETIONS`].

use std::fmt;

use crossterm::event::{KeyCode, KeyModifiers};
use smith_diag::Diagnose;

use crate::layout::Size;
use crate::style::{Attrs, Color, Style};

// ---- the plain-data description ------------------------------------------

/// One plugin's contribution to the product, as plain data (the shape of
/// the extension world's `contributions` record, without the parts the
/// interface does not use).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProductSpec {
    /// The contributing plugin (named in errors).
    pub plugin: String,
    /// Slash commands.
    pub commands: Vec<CommandSpec>,
    /// Key bindings.
    pub keys: Vec<KeySpec>,
    /// Themes.
    pub themes: Vec<ThemeSpec>,
    /// The layout tree (flat: node 0 is the root); empty for none.
    pub layout: Vec<NodeSpec>,
    /// Tool presentations.
    pub tools: Vec<ToolSpec>,
}

/// A slash command as contributed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CommandSpec {
    /// The name without the slash.
    pub name: String,
    /// One line for the popup and help.
    pub description: String,
    /// The argument's shape (`[MODEL]`), empty for none.
    pub usage: String,
    /// Where the argument completes from (one of [`COMPLETIONS`]).
    pub complete: String,
}

/// A key binding as contributed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeySpec {
    /// The chord (`ctrl+c`, `alt+enter`, `pageup`).
    pub keys: String,
    /// The action's name (one of [`Action::ALL`]).
    pub action: String,
    /// Where it applies: `editor`, `transcript` or `global`.
    pub context: String,
}

/// A named style as contributed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StyleSpec {
    /// The role it styles (one of [`ROLES`]).
    pub name: String,
    /// Foreground color, if set.
    pub fg: Option<String>,
    /// Background color, if set.
    pub bg: Option<String>,
    /// Bold.
    pub bold: bool,
    /// Dim.
    pub dim: bool,
    /// Italic.
    pub italic: bool,
    /// Underline.
    pub underline: bool,
    /// Reverse video.
    pub reverse: bool,
}

/// A theme as contributed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ThemeSpec {
    /// The theme's name.
    pub name: String,
    /// Its styles by role.
    pub styles: Vec<StyleSpec>,
}

/// How a layout node arranges its children.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NodeKind {
    /// Top to bottom.
    #[default]
    Column,
    /// Side by side (not supported by this interface).
    Row,
    /// A named region.
    Region,
}

/// One layout node as contributed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeSpec {
    /// How it arranges its children.
    pub kind: NodeKind,
    /// The region's name (one of [`REGIONS`]) or a label.
    pub name: String,
    /// Fixed size in rows; none for flexible.
    pub size: Option<u32>,
    /// Weight among flexible siblings.
    pub weight: u32,
    /// Child node indices.
    pub children: Vec<u32>,
}

/// A tool presentation as contributed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolSpec {
    /// The tool's name.
    pub tool: String,
    /// The call's title with a `{ARGUMENT}` placeholder for the subject.
    pub title: String,
    /// The argument shown as the call's subject.
    pub subject_argument: Option<String>,
    /// `text`, `diff`, `listing` or `code`.
    pub result_style: String,
    /// Result lines shown before folding.
    pub preview_lines: u32,
}

// ---- the vocabulary --------------------------------------------------------

/// The screen's regions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    /// The scrollable transcript (`transcript`).
    Transcript,
    /// The status line (`status`).
    Status,
    /// The input editor (`editor`).
    Input,
}

/// Region names and their regions.
pub const REGIONS: [(&str, Region); 3] = [
    ("transcript", Region::Transcript),
    ("status", Region::Status),
    ("editor", Region::Input),
];

/// Theme role names, in [`Theme`] field order.
pub const ROLES: [&str; 15] = [
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
    "border",
];

/// Palette color names; `COLORS[i]` is palette index `i`.
pub const COLORS: [&str; 16] = [
    "black",
    "red",
    "green",
    "yellow",
    "blue",
    "magenta",
    "cyan",
    "white",
    "bright-black",
    "bright-red",
    "bright-green",
    "bright-yellow",
    "bright-blue",
    "bright-magenta",
    "bright-cyan",
    "bright-white",
];

/// Where a command's argument completes from.
pub const COMPLETIONS: [&str; 6] = ["none", "models", "sessions", "plugins", "entries", "files"];

const CONTEXTS: [(&str, KeyContext); 3] = [
    ("editor", KeyContext::Editor),
    ("transcript", KeyContext::Transcript),
    ("global", KeyContext::Global),
];

const RESULT_STYLES: [(&str, ResultStyle); 4] = [
    ("text", ResultStyle::Text),
    ("diff", ResultStyle::Diff),
    ("listing", ResultStyle::Listing),
    ("code", ResultStyle::Code),
];

const CHORD_KEYS: &str = "a single character, enter, esc, tab, up, down, left, right, home, end, pageup, pagedown, backspace, delete or f1 to f24, after any of the modifiers ctrl, alt, shift joined with + (e.g. ctrl+c, alt+enter, pageup)";

fn lookup<T: Copy>(table: &[(&str, T)], name: &str) -> Option<T> {
    table.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
}

fn names<T>(table: &[(&str, T)]) -> String {
    table.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

/// The layout: regions top to bottom with their sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutSpec {
    /// Regions and their sizes.
    pub regions: [(Region, Size); 3],
}

impl LayoutSpec {
    /// The layout used when no plugin contributes a valid one (so the
    /// interface can start and recover the runtime): the transcript, one
    /// status row, the editor growing from two to nine rows.
    pub const RECOVERY: LayoutSpec = LayoutSpec {
        regions: [
            (Region::Transcript, Size::Fill),
            (Region::Status, Size::Fixed(1)),
            (Region::Input, Size::Content { min: 2, max: 9 }),
        ],
    };
}

/// Styles by role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// User messages (`user`).
    pub user: Style,
    /// Assistant text (`assistant`).
    pub assistant: Style,
    /// Thinking (`thinking`).
    pub thinking: Style,
    /// A tool call line (`tool`).
    pub tool: Style,
    /// Tool output (`tool-output`).
    pub tool_output: Style,
    /// A failed tool (`tool-error`).
    pub tool_error: Style,
    /// Errors (`error`).
    pub error: Style,
    /// Notices from the interface itself (`notice`).
    pub notice: Style,
    /// The status line (`status`).
    pub status: Style,
    /// The input prompt marker (`prompt`).
    pub prompt: Style,
    /// Popup and overlay body (`popup`).
    pub popup: Style,
    /// The selected popup row (`selected`).
    pub selected: Style,
    /// Search matches (`match`).
    pub matched: Style,
    /// The current search match (`current-match`).
    pub current_match: Style,
    /// Borders and separators (`border`).
    pub border: Style,
}

impl Theme {
    /// Every role drawn in the terminal's default look.
    pub const PLAIN: Theme = Theme {
        user: Style::PLAIN,
        assistant: Style::PLAIN,
        thinking: Style::PLAIN,
        tool: Style::PLAIN,
        tool_output: Style::PLAIN,
        tool_error: Style::PLAIN,
        error: Style::PLAIN,
        notice: Style::PLAIN,
        status: Style::PLAIN,
        prompt: Style::PLAIN,
        popup: Style::PLAIN,
        selected: Style::PLAIN,
        matched: Style::PLAIN,
        current_match: Style::PLAIN,
        border: Style::PLAIN,
    };

    fn roles_mut(&mut self) -> [&mut Style; 15] {
        [
            &mut self.user,
            &mut self.assistant,
            &mut self.thinking,
            &mut self.tool,
            &mut self.tool_output,
            &mut self.tool_error,
            &mut self.error,
            &mut self.notice,
            &mut self.status,
            &mut self.prompt,
            &mut self.popup,
            &mut self.selected,
            &mut self.matched,
            &mut self.current_match,
            &mut self.border,
        ]
    }

    /// The style of role `name` (one of [`ROLES`]).
    pub fn role(&self, name: &str) -> Option<Style> {
        let i = ROLES.iter().position(|r| *r == name)?;
        let mut copy = *self;
        let roles = copy.roles_mut();
        Some(*roles[i])
    }

    /// The theme without colors (for `NO_COLOR`).
    #[must_use]
    pub fn monochrome(&self) -> Theme {
        let mut t = *self;
        for s in t.roles_mut() {
            *s = s.monochrome();
        }
        t
    }
}

/// What a key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Send the input (steers while the agent works).
    Submit,
    /// Queue the input as a follow-up.
    QueueFollowUp,
    /// Insert a line break in the input.
    Newline,
    /// Interrupt the agent (or close the overlay).
    Interrupt,
    /// Clear the input; on an empty input, exit.
    ClearOrExit,
    /// Scroll the transcript up a few lines.
    ScrollUp,
    /// Scroll the transcript down a few lines.
    ScrollDown,
    /// Scroll up a page.
    PageUp,
    /// Scroll down a page.
    PageDown,
    /// Jump to the first entry.
    Top,
    /// Return to the latest output and follow it.
    Latest,
    /// Search the transcript.
    Search,
    /// Show the help overlay.
    Help,
    /// Expand or collapse thinking and tool output.
    ToggleDetails,
    /// Expand or collapse the selected entry (without a selection, the
    /// latest thinking or tool output).
    ToggleEntry,
    /// Copy the selected entry (or the current search match, or the last
    /// assistant message).
    Copy,
    /// Select the previous (older) entry.
    SelectPrev,
    /// Select the next (newer) entry.
    SelectNext,
    /// Open the model picker.
    ModelPicker,
    /// Open the session picker.
    SessionPicker,
}

impl Action {
    /// Every action, each with its name.
    pub const ALL: [(&'static str, Action); 20] = [
        ("submit", Action::Submit),
        ("queue-follow-up", Action::QueueFollowUp),
        ("newline", Action::Newline),
        ("interrupt", Action::Interrupt),
        ("clear-or-exit", Action::ClearOrExit),
        ("scroll-up", Action::ScrollUp),
        ("scroll-down", Action::ScrollDown),
        ("page-up", Action::PageUp),
        ("page-down", Action::PageDown),
        ("top", Action::Top),
        ("latest", Action::Latest),
        ("search", Action::Search),
        ("help", Action::Help),
        ("toggle-details", Action::ToggleDetails),
        ("toggle-entry", Action::ToggleEntry),
        ("copy", Action::Copy),
        ("select-prev", Action::SelectPrev),
        ("select-next", Action::SelectNext),
        ("model-picker", Action::ModelPicker),
        ("session-picker", Action::SessionPicker),
    ];

    /// The action's name in plugin contributions.
    pub fn name(self) -> &'static str {
        Action::ALL
            .iter()
            .find(|(_, a)| *a == self)
            .map_or("", |(n, _)| n)
    }

    /// What the action does, for help.
    pub fn describe(self) -> &'static str {
        match self {
            Action::Submit => "send (steers while the agent works)",
            Action::QueueFollowUp => "queue as a follow-up",
            Action::Newline => "new line in the input",
            Action::Interrupt => "interrupt / close",
            Action::ClearOrExit => "interrupt or clear the input; twice: exit",
            Action::ScrollUp => "scroll up",
            Action::ScrollDown => "scroll down",
            Action::PageUp => "scroll up a page",
            Action::PageDown => "scroll down a page",
            Action::Top => "first entry",
            Action::Latest => "back to the latest output",
            Action::Search => "search the transcript",
            Action::Help => "this help",
            Action::ToggleDetails => "expand or collapse every entry's details",
            Action::ToggleEntry => "expand/collapse the selected or last entry",
            Action::Copy => "copy the selection (or match, or answer)",
            Action::SelectPrev => "select the previous entry",
            Action::SelectNext => "select the next entry",
            Action::ModelPicker => "choose the model",
            Action::SessionPicker => "open a stored session",
        }
    }
}

/// Where a key binding applies. The interface keeps one binding table for
/// the editor and the transcript (the editor has focus whenever no overlay
/// does), so the context documents intent; overlays own their keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyContext {
    /// While typing.
    Editor,
    /// Moving in the transcript.
    Transcript,
    /// Anywhere.
    Global,
}

/// How a tool's result is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultStyle {
    /// Plain text.
    Text,
    /// A diff (drawn as text by this interface).
    Diff,
    /// A listing (drawn as text by this interface).
    Listing,
    /// Source code (drawn as text by this interface).
    Code,
}

/// One key binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyBinding {
    /// The chord as written (`ctrl+c`).
    pub chord: String,
    /// The parsed key.
    pub code: KeyCode,
    /// The parsed modifiers.
    pub mods: KeyModifiers,
    /// What it does.
    pub action: Action,
    /// Where it applies.
    pub context: KeyContext,
}

/// A slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// Name without the slash.
    pub name: String,
    /// One-line description.
    pub help: String,
    /// The argument's shape, empty for none.
    pub usage: String,
}

/// How calls of one tool are shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolPresentation {
    /// The tool's name.
    pub tool: String,
    /// The title, with `{ARGUMENT}` for the subject.
    pub title: String,
    /// The subject argument.
    pub subject: Option<String>,
    /// How the result is drawn.
    pub result_style: ResultStyle,
    /// Result lines shown while collapsed.
    pub preview_lines: u8,
}

impl ToolPresentation {
    /// The call's title line with `summary` (the subject argument's value
    /// on one line) in the subject's placeholder.
    pub fn title_line(&self, summary: &str) -> String {
        let mut line = match &self.subject {
            Some(arg) => self.title.replace(&format!("{{{arg}}}"), summary),
            None => self.title.clone(),
        };
        line.truncate(line.trim_end().len());
        line
    }
}

/// A contribution item the interface left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProductError {
    /// The plugin that contributed it.
    pub plugin: String,
    /// The item (`key binding "ctrl+q"`, `theme "dark" style "usr"`).
    pub item: String,
    /// What is wrong with it.
    pub problem: String,
    /// The accepted values.
    pub accepted: String,
    /// What to do about it.
    pub fix: String,
}

impl ProductError {
    fn item(plugin: &str, item: String, problem: String, accepted: String) -> ProductError {
        ProductError {
            plugin: plugin.to_owned(),
            item,
            problem,
            accepted,
            fix: format!(
                "fix the item in the plugin (see docs/tui.md, \"Presentation source\") or disable the plugin (`smith plugin disable {plugin}`); the interface starts without the item"
            ),
        }
    }
}

impl fmt::Display for ProductError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "plugin {} contributes {}: {}; the accepted values are {}. Next: {}",
            self.plugin, self.item, self.problem, self.accepted, self.fix
        )
    }
}

impl std::error::Error for ProductError {}

impl Diagnose for ProductError {
    /// This error as a warning diagnostic (`tui.product`).
    fn to_diagnostic(&self) -> smith_diag::Diagnostic {
        smith_diag::Diagnostic::warning(
            "tui.product",
            format!(
                "plugin {} contributes {}: {}",
                self.plugin, self.item, self.problem
            ),
            format!(
                "the interface understands only its documented vocabulary; the accepted values are {}",
                self.accepted
            ),
            self.fix.clone(),
        )
        .with_surface(smith_diag::Surface::plugin(&self.plugin))
    }
}

/// Parses a chord like `ctrl+c`, `alt+enter` or `pageup`.
pub fn parse_chord(chord: &str) -> Option<(KeyCode, KeyModifiers)> {
    let mut mods = KeyModifiers::NONE;
    let mut parts = chord.split('+').peekable();
    let mut key = None;
    while let Some(part) = parts.next() {
        if parts.peek().is_some() {
            mods |= match part {
                "ctrl" => KeyModifiers::CONTROL,
                "alt" => KeyModifiers::ALT,
                "shift" => KeyModifiers::SHIFT,
                _ => return None,
            };
        } else {
            key = Some(match part {
                "enter" => KeyCode::Enter,
                "esc" => KeyCode::Esc,
                "tab" => KeyCode::Tab,
                "up" => KeyCode::Up,
                "down" => KeyCode::Down,
                "left" => KeyCode::Left,
                "right" => KeyCode::Right,
                "home" => KeyCode::Home,
                "end" => KeyCode::End,
                "pageup" => KeyCode::PageUp,
                "pagedown" => KeyCode::PageDown,
                "backspace" => KeyCode::Backspace,
                "delete" => KeyCode::Delete,
                f if f.starts_with('f') && f.len() > 1 => {
                    let n: u8 = f[1..].parse().ok()?;
                    if !(1..=24).contains(&n) {
                        return None;
                    }
                    KeyCode::F(n)
                }
                c if c.chars().count() == 1 => KeyCode::Char(c.chars().next()?),
                _ => return None,
            });
        }
    }
    key.map(|k| (k, mods))
}

/// Everything the product contributes to the interface, validated and
/// merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Product {
    /// Screen layout.
    pub layout: LayoutSpec,
    /// The `default` theme (drawn when no other is chosen).
    pub theme: Theme,
    /// Every theme by name, `default` first.
    pub themes: Vec<(String, Theme)>,
    /// Key bindings, in contribution order.
    pub keys: Vec<KeyBinding>,
    /// Slash commands, in contribution order.
    pub commands: Vec<Command>,
    /// Tool presentations.
    pub tools: Vec<ToolPresentation>,
}

/// Bindings the interface adds when no plugin binds their action, so it
/// can always be entered, interrupted and left.
const RECOVERY_KEYS: [(&str, Action); 3] = [
    ("enter", Action::Submit),
    ("esc", Action::Interrupt),
    ("ctrl+c", Action::ClearOrExit),
];

impl Product {
    /// The name of the theme drawn when no other is chosen.
    pub fn default_theme(&self) -> &'static str {
        "default"
    }

    /// The themes, by name.
    pub fn themes(&self) -> Vec<(&str, Theme)> {
        self.themes.iter().map(|(n, t)| (n.as_str(), *t)).collect()
    }

    /// The theme named `name`.
    pub fn theme_named(&self, name: &str) -> Option<Theme> {
        self.themes.iter().find(|(n, _)| n == name).map(|(_, t)| *t)
    }

    /// The presentation of tool `name`, if a plugin gave one.
    pub fn tool(&self, name: &str) -> Option<&ToolPresentation> {
        self.tools.iter().find(|t| t.tool == name)
    }

    /// The product described by one complete contribution (every item
    /// valid).
    ///
    /// # Errors
    ///
    /// Every invalid item, or a missing layout.
    pub fn from_spec(spec: &ProductSpec) -> Result<Product, Vec<ProductError>> {
        let (product, errors) = Product::build(std::slice::from_ref(spec));
        if errors.is_empty() {
            Ok(product)
        } else {
            Err(errors)
        }
    }

    /// The product from the contributions of every loaded plugin, in load
    /// order (later ones override earlier ones item by item), with the
    /// items that were left out. Without any valid layout the
    /// [`LayoutSpec::RECOVERY`] layout is used (and reported); when no
    /// plugin binds submit, interrupt or clear-or-exit, Enter, Esc and
    /// Ctrl+C are bound to them so the runtime can always be entered and
    /// left.
    pub fn build(specs: &[ProductSpec]) -> (Product, Vec<ProductError>) {
        let mut errors = Vec::new();
        let mut layout = None;
        let mut keys: Vec<KeyBinding> = Vec::new();
        let mut commands: Vec<Command> = Vec::new();
        let mut tools: Vec<ToolPresentation> = Vec::new();
        // Per theme: each role's style where one was given.
        let mut themes: Vec<(String, [Option<Style>; 15])> = Vec::new();
        for spec in specs {
            let err = |item: String, problem: String, accepted: String| {
                ProductError::item(&spec.plugin, item, problem, accepted)
            };
            if !spec.layout.is_empty() {
                match parse_layout(&spec.layout) {
                    Ok(l) => layout = Some(l),
                    Err((problem, accepted)) => {
                        errors.push(err("its layout".to_owned(), problem, accepted));
                    }
                }
            }
            for k in &spec.keys {
                match parse_key(k) {
                    Ok(binding) => {
                        match keys
                            .iter_mut()
                            .find(|b| (b.code, b.mods) == (binding.code, binding.mods))
                        {
                            Some(old) => *old = binding,
                            None => keys.push(binding),
                        }
                    }
                    Err((problem, accepted)) => {
                        errors.push(err(
                            format!("the key binding {:?}", k.keys),
                            problem,
                            accepted,
                        ));
                    }
                }
            }
            for c in &spec.commands {
                match parse_command(c) {
                    Ok(command) => match commands.iter_mut().find(|o| o.name == command.name) {
                        Some(old) => *old = command,
                        None => commands.push(command),
                    },
                    Err((problem, accepted)) => {
                        errors.push(err(format!("the command {:?}", c.name), problem, accepted));
                    }
                }
            }
            for t in &spec.tools {
                match parse_tool(t) {
                    Ok(tool) => match tools.iter_mut().find(|o| o.tool == tool.tool) {
                        Some(old) => *old = tool,
                        None => tools.push(tool),
                    },
                    Err((problem, accepted)) => errors.push(err(
                        format!("the presentation of tool {:?}", t.tool),
                        problem,
                        accepted,
                    )),
                }
            }
            for theme in &spec.themes {
                if theme.name.trim().is_empty() {
                    errors.push(err(
                        "a theme without a name".to_owned(),
                        "the name is empty".to_owned(),
                        "any non-empty name (`default` is the one drawn unless `tui.theme` names another)".to_owned(),
                    ));
                    continue;
                }
                let at = match themes.iter().position(|(n, _)| *n == theme.name) {
                    Some(at) => at,
                    None => {
                        themes.push((theme.name.clone(), [None; 15]));
                        themes.len() - 1
                    }
                };
                for s in &theme.styles {
                    match parse_style(s) {
                        Ok((role, style)) => themes[at].1[role] = Some(style),
                        Err((problem, accepted)) => errors.push(err(
                            format!("the style {:?} of theme {:?}", s.name, theme.name),
                            problem,
                            accepted,
                        )),
                    }
                }
            }
        }
        let layout = layout.unwrap_or_else(|| {
            errors.push(ProductError {
                plugin: "smith/product".to_owned(),
                item: "no layout".to_owned(),
                problem: "no loaded plugin contributes a valid layout, so the interface draws its recovery layout (transcript, status line, editor)".to_owned(),
                accepted: "a column of the regions transcript, status and editor".to_owned(),
                fix: "enable smith/product (`smith plugin enable smith/product`; `smith plugin list` shows whether it loads) or install a plugin that contributes a layout".to_owned(),
            });
            LayoutSpec::RECOVERY
        });
        for (chord, action) in RECOVERY_KEYS {
            if keys.iter().any(|b| b.action == action) {
                continue;
            }
            if let Some((code, mods)) = parse_chord(chord)
                && !keys.iter().any(|b| (b.code, b.mods) == (code, mods))
            {
                keys.push(KeyBinding {
                    chord: chord.to_owned(),
                    code,
                    mods,
                    action,
                    context: KeyContext::Global,
                });
            }
        }
        let resolve = |roles: &[Option<Style>; 15], base: Theme| {
            let mut theme = base;
            for (slot, given) in theme.roles_mut().into_iter().zip(roles) {
                if let Some(style) = given {
                    *slot = *style;
                }
            }
            theme
        };
        let default = themes
            .iter()
            .find(|(n, _)| n == "default")
            .map_or(Theme::PLAIN, |(_, roles)| resolve(roles, Theme::PLAIN));
        let mut all = vec![("default".to_owned(), default)];
        all.extend(
            themes
                .iter()
                .filter(|(n, _)| n != "default")
                .map(|(n, roles)| (n.clone(), resolve(roles, default))),
        );
        (
            Product {
                layout,
                theme: default,
                themes: all,
                keys,
                commands,
                tools,
            },
            errors,
        )
    }
}

type Invalid = (String, String);

fn parse_key(k: &KeySpec) -> Result<KeyBinding, Invalid> {
    let (code, mods) = parse_chord(&k.keys).ok_or_else(|| {
        (
            format!("the chord {:?} is not a key the interface knows", k.keys),
            CHORD_KEYS.to_owned(),
        )
    })?;
    let action = lookup(&Action::ALL, &k.action).ok_or_else(|| {
        (
            format!("there is no action {:?}", k.action),
            names(&Action::ALL),
        )
    })?;
    let context = lookup(&CONTEXTS, &k.context).ok_or_else(|| {
        (
            format!("there is no key context {:?}", k.context),
            names(&CONTEXTS),
        )
    })?;
    Ok(KeyBinding {
        chord: k.keys.clone(),
        code,
        mods,
        action,
        context,
    })
}

fn parse_command(c: &CommandSpec) -> Result<Command, Invalid> {
    if c.name.is_empty() || c.name.starts_with('/') || c.name.contains(char::is_whitespace) {
        return Err((
            format!("the name {:?} cannot be typed as /NAME", c.name),
            "a non-empty name without the slash and without spaces (e.g. `model`)".to_owned(),
        ));
    }
    if !COMPLETIONS.contains(&c.complete.as_str()) {
        return Err((
            format!("there is no completion source {:?}", c.complete),
            COMPLETIONS.join(", "),
        ));
    }
    Ok(Command {
        name: c.name.clone(),
        help: c.description.clone(),
        usage: c.usage.clone(),
    })
}

fn parse_tool(t: &ToolSpec) -> Result<ToolPresentation, Invalid> {
    let result_style = lookup(&RESULT_STYLES, &t.result_style).ok_or_else(|| {
        (
            format!("there is no result style {:?}", t.result_style),
            names(&RESULT_STYLES),
        )
    })?;
    let preview_lines = u8::try_from(t.preview_lines)
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| {
            (
                format!(
                    "{} preview lines cannot be shown while collapsed",
                    t.preview_lines
                ),
                "1 to 255 preview lines".to_owned(),
            )
        })?;
    // The title may name only the subject argument: the interface is given
    // the subject's value, not the whole argument object.
    let mut rest = t.title.as_str();
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else { break };
        let name = &after[..close];
        if t.subject_argument.as_deref() != Some(name) {
            return Err((
                format!(
                    "the title {:?} names the argument {{{name}}}, which is not its subject argument",
                    t.title
                ),
                match &t.subject_argument {
                    Some(s) => format!("the placeholder {{{s}}} (its subject argument) or none"),
                    None => "no placeholder (it has no subject argument)".to_owned(),
                },
            ));
        }
        rest = &after[close + 1..];
    }
    Ok(ToolPresentation {
        tool: t.tool.clone(),
        title: t.title.clone(),
        subject: t.subject_argument.clone(),
        result_style,
        preview_lines,
    })
}

fn parse_color(name: &str) -> Option<Color> {
    if let Some(i) = COLORS.iter().position(|c| *c == name) {
        return u8::try_from(i).ok().map(Color::Indexed);
    }
    let hex = name.strip_prefix('#')?;
    if hex.len() != 6 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).ok();
    Some(Color::Rgb(byte(0)?, byte(2)?, byte(4)?))
}

fn parse_style(s: &StyleSpec) -> Result<(usize, Style), Invalid> {
    let role = ROLES.iter().position(|r| *r == s.name).ok_or_else(|| {
        (
            format!("there is no theme role {:?}", s.name),
            ROLES.join(", "),
        )
    })?;
    let color = |value: &Option<String>, which: &str| match value {
        None => Ok(Color::Reset),
        Some(v) => parse_color(v).ok_or_else(|| {
            (
                format!("the {which} color {v:?} is not a color"),
                format!("#rrggbb or one of {}", COLORS.join(", ")),
            )
        }),
    };
    let mut attrs = Attrs::NONE;
    for (on, a) in [
        (s.bold, Attrs::BOLD),
        (s.dim, Attrs::DIM),
        (s.italic, Attrs::ITALIC),
        (s.underline, Attrs::UNDERLINE),
        (s.reverse, Attrs::REVERSE),
    ] {
        if on {
            attrs = attrs.with(a);
        }
    }
    Ok((
        role,
        Style {
            fg: color(&s.fg, "foreground")?,
            bg: color(&s.bg, "background")?,
            attrs,
        },
    ))
}

fn parse_layout(nodes: &[NodeSpec]) -> Result<LayoutSpec, Invalid> {
    let accepted = || {
        "a root column (node 0) whose children are the regions transcript, status and editor, each once; transcript and status take `size` rows or fill the rest, the editor grows with its text from 2 rows up to `size` (at least 2)".to_owned()
    };
    let bad = |problem: String| Err((problem, accepted()));
    let Some(root) = nodes.first() else {
        return bad("the layout has no nodes".to_owned());
    };
    if root.kind != NodeKind::Column {
        return bad(format!(
            "the root node {:?} is a {}, and this interface lays its regions out in one column",
            root.name,
            if root.kind == NodeKind::Row {
                "row"
            } else {
                "region"
            }
        ));
    }
    let mut regions = Vec::with_capacity(3);
    for &child in &root.children {
        let Some(node) = nodes.get(child as usize).filter(|_| child != 0) else {
            return bad(format!(
                "the root names child {child}, which is not a node of the layout ({} nodes)",
                nodes.len()
            ));
        };
        if node.kind != NodeKind::Region {
            return bad(format!(
                "node {child} ({:?}) is not a region; nested columns and rows are not supported",
                node.name
            ));
        }
        let Some(region) = lookup(&REGIONS, &node.name) else {
            return Err((
                format!("there is no region {:?}", node.name),
                names(&REGIONS),
            ));
        };
        if regions.iter().any(|(r, _)| *r == region) {
            return bad(format!("the region {:?} appears twice", node.name));
        }
        let rows = match node.size.map(u16::try_from) {
            None => None,
            Some(Ok(n)) => Some(n),
            Some(Err(_)) => {
                return bad(format!(
                    "region {:?} asks for {} rows",
                    node.name,
                    node.size.unwrap_or_default()
                ));
            }
        };
        let size = match (region, rows) {
            (Region::Input, Some(max)) if max >= 2 => Size::Content { min: 2, max },
            (Region::Input, Some(max)) => {
                return bad(format!(
                    "the editor's size {max} is less than its 2 rows (a line of text and its border)"
                ));
            }
            (Region::Input, None) => Size::Content {
                min: 2,
                max: u16::MAX,
            },
            (_, Some(n)) => Size::Fixed(n),
            (_, None) => Size::Fill,
        };
        regions.push((region, size));
    }
    match regions.as_slice() {
        [a, b, c] => Ok(LayoutSpec {
            regions: [*a, *b, *c],
        }),
        _ => {
            let missing: Vec<&str> = REGIONS
                .iter()
                .filter(|(_, r)| !regions.iter().any(|(x, _)| x == r))
                .map(|(n, _)| *n)
                .collect();
            bad(format!(
                "the layout lacks the region(s) {}",
                missing.join(", ")
            ))
        }
    }
}

#[cfg(test)]
mod tests;
