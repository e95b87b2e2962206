//! The product's default presentation: screen layout, theme, key bindings
//! and command list, as data.
//!
//! This is shaped as the product plugin's contribution will be (a layout
//! description, a role → style table, chord → action bindings and a command
//! list). The TUI reads it once at start and caches the parsed form; the
//! render path never calls into it. When the product plugin provides these,
//! [`Product::builtin`] is the one place that changes source.

use crate::layout::Size;
use crate::style::{Attrs, Color, Style};

/// The screen's regions, top to bottom.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    /// The scrollable transcript.
    Transcript,
    /// The status line.
    Status,
    /// The input editor.
    Input,
}

/// The layout: regions top to bottom with their sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutSpec {
    /// Regions and their sizes.
    pub regions: [(Region, Size); 3],
}

/// Styles by role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// User messages.
    pub user: Style,
    /// Assistant text.
    pub assistant: Style,
    /// Thinking.
    pub thinking: Style,
    /// A tool call line.
    pub tool: Style,
    /// Tool output.
    pub tool_output: Style,
    /// A failed tool.
    pub tool_error: Style,
    /// Errors.
    pub error: Style,
    /// Notices from the interface itself.
    pub notice: Style,
    /// The status line.
    pub status: Style,
    /// The input prompt marker.
    pub prompt: Style,
    /// Popup and overlay body.
    pub popup: Style,
    /// The selected popup row.
    pub selected: Style,
    /// Search matches.
    pub matched: Style,
    /// The current search match.
    pub current_match: Style,
    /// Borders and separators.
    pub border: Style,
}

impl Theme {
    /// The theme without colors (for `NO_COLOR`).
    #[must_use]
    pub fn monochrome(&self) -> Theme {
        Theme {
            user: self.user.monochrome(),
            assistant: self.assistant.monochrome(),
            thinking: self.thinking.monochrome(),
            tool: self.tool.monochrome(),
            tool_output: self.tool_output.monochrome(),
            tool_error: self.tool_error.monochrome(),
            error: self.error.monochrome(),
            notice: self.notice.monochrome(),
            status: self.status.monochrome(),
            prompt: self.prompt.monochrome(),
            popup: self.popup.monochrome(),
            selected: self.selected.monochrome(),
            matched: self.matched.monochrome(),
            current_match: self.current_match.monochrome(),
            border: self.border.monochrome(),
        }
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
    /// What the action does, for help.
    pub fn describe(self) -> &'static str {
        match self {
            Action::Submit => "send (steers while the agent works)",
            Action::QueueFollowUp => "queue as a follow-up",
            Action::Newline => "new line in the input",
            Action::Interrupt => "interrupt / close",
            Action::ClearOrExit => "clear the input, then exit",
            Action::ScrollUp => "scroll up",
            Action::ScrollDown => "scroll down",
            Action::PageUp => "scroll up a page",
            Action::PageDown => "scroll down a page",
            Action::Top => "first entry",
            Action::Latest => "back to the latest output",
            Action::Search => "search the transcript",
            Action::Help => "this help",
            Action::ToggleDetails => "expand or collapse details",
            Action::Copy => "copy the selection (or match, or answer)",
            Action::SelectPrev => "select the previous entry",
            Action::SelectNext => "select the next entry",
            Action::ModelPicker => "choose the model",
            Action::SessionPicker => "open a stored session",
        }
    }
}

/// One key binding: a chord like `ctrl+c`, `alt+enter`, `pageup`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyBinding {
    /// The chord.
    pub chord: &'static str,
    /// What it does.
    pub action: Action,
}

/// A slash command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandSpec {
    /// Name without the slash.
    pub name: &'static str,
    /// One-line description.
    pub help: &'static str,
}

/// Everything the product contributes to the TUI.
#[derive(Debug, Clone, Copy)]
pub struct Product {
    /// Screen layout.
    pub layout: LayoutSpec,
    /// Theme.
    pub theme: Theme,
    /// Key bindings.
    pub keys: &'static [KeyBinding],
    /// Slash commands.
    pub commands: &'static [CommandSpec],
}

const KEYS: &[KeyBinding] = &[
    KeyBinding {
        chord: "enter",
        action: Action::Submit,
    },
    KeyBinding {
        chord: "alt+enter",
        action: Action::QueueFollowUp,
    },
    KeyBinding {
        chord: "shift+enter",
        action: Action::Newline,
    },
    KeyBinding {
        chord: "ctrl+j",
        action: Action::Newline,
    },
    KeyBinding {
        chord: "esc",
        action: Action::Interrupt,
    },
    KeyBinding {
        chord: "ctrl+c",
        action: Action::ClearOrExit,
    },
    KeyBinding {
        chord: "shift+up",
        action: Action::ScrollUp,
    },
    KeyBinding {
        chord: "shift+down",
        action: Action::ScrollDown,
    },
    KeyBinding {
        chord: "pageup",
        action: Action::PageUp,
    },
    KeyBinding {
        chord: "pagedown",
        action: Action::PageDown,
    },
    KeyBinding {
        chord: "ctrl+home",
        action: Action::Top,
    },
    KeyBinding {
        chord: "ctrl+end",
        action: Action::Latest,
    },
    KeyBinding {
        chord: "ctrl+g",
        action: Action::Latest,
    },
    KeyBinding {
        chord: "ctrl+f",
        action: Action::Search,
    },
    KeyBinding {
        chord: "f1",
        action: Action::Help,
    },
    KeyBinding {
        chord: "ctrl+t",
        action: Action::ToggleDetails,
    },
    KeyBinding {
        chord: "ctrl+y",
        action: Action::Copy,
    },
    KeyBinding {
        chord: "alt+up",
        action: Action::SelectPrev,
    },
    KeyBinding {
        chord: "alt+down",
        action: Action::SelectNext,
    },
    KeyBinding {
        chord: "ctrl+p",
        action: Action::ModelPicker,
    },
    KeyBinding {
        chord: "ctrl+r",
        action: Action::SessionPicker,
    },
];

const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "help",
        help: "show keys and commands",
    },
    CommandSpec {
        name: "model",
        help: "choose the model",
    },
    CommandSpec {
        name: "new",
        help: "start a new session",
    },
    CommandSpec {
        name: "resume",
        help: "open a stored session",
    },
    CommandSpec {
        name: "continue",
        help: "continue the latest session",
    },
    CommandSpec {
        name: "branch",
        help: "choose a branch of the session",
    },
    CommandSpec {
        name: "compact",
        help: "compact the context",
    },
    CommandSpec {
        name: "replay",
        help: "replay the session's transcript",
    },
    CommandSpec {
        name: "plugins",
        help: "list plugins",
    },
    CommandSpec {
        name: "search",
        help: "search the transcript",
    },
    CommandSpec {
        name: "copy",
        help: "copy the last answer",
    },
    CommandSpec {
        name: "thinking",
        help: "expand or collapse details",
    },
    CommandSpec {
        name: "quit",
        help: "exit smith",
    },
];

impl Product {
    /// The name of the theme drawn when no other is chosen.
    pub fn default_theme(&self) -> &'static str {
        "default"
    }

    /// The themes this product provides, by name: smith/product provides
    /// `default`, the theme of [`Product::builtin`].
    pub fn themes(&self) -> Vec<(&'static str, Theme)> {
        vec![(self.default_theme(), self.theme)]
    }

    /// The built-in presentation.
    pub fn builtin() -> Product {
        let fg = |n| Style::fg(Color::Indexed(n));
        Product {
            layout: LayoutSpec {
                regions: [
                    (Region::Transcript, Size::Fill),
                    (Region::Status, Size::Fixed(1)),
                    (Region::Input, Size::Content { min: 2, max: 9 }),
                ],
            },
            theme: Theme {
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
            },
            keys: KEYS,
            commands: COMMANDS,
        }
    }
}
