//! Integration tests for smith-tui: golden screens, scripted key
//! sequences (scroll pinning, search, overlays, resize) and exact
//! allocation counts of steady-state frames.

#![allow(clippy::unwrap_used)]

mod allocs;
mod golden;
mod render;
mod scripts;
mod session;
mod trust;

#[global_allocator]
static ALLOCATOR: smith_alloc::AccountingAllocator = smith_alloc::AccountingAllocator::new();

use smith_tui::headless::Headless;
use smith_tui::{App, Options, Status};

/// An app with a deterministic status line.
pub fn app() -> App {
    let mut app = App::new(smith_tui::fixture::product(), Options::default());
    app.set_status(Status {
        model: "mock-model".to_owned(),
        cost: Some(0.0123),
        context: Some((12_000, 200_000)),
        busy: false,
        queue: 0,
        activity: String::new(),
        retry_at: None,
        thinking: "high".to_owned(),
    });
    app
}

/// A short conversation with a tool call, thinking and an error.
pub fn conversation(app: &mut App) {
    app.user_message("list the files and read the readme");
    app.thinking_delta("The user wants a listing.\nI will run ls first.");
    app.assistant_delta("I'll look at the directory first.");
    app.tool_start("c1", "bash", "ls -la");
    app.tool_end(
        "c1",
        true,
        "total 3\nREADME.md\nsrc\nCargo.toml\ntarget\ntests\ndocs\nscripts\n",
    );
    app.tool_start("c2", "read", "README.md");
    app.tool_end("c2", false, "error: permission denied\n");
    app.assistant_delta("The readme could not be read: \u{1b}[31mpermission denied\u{1b}[0m.");
    app.error("provider error: rate limited (retry in 2 s)");
}

/// A headless screen of `w` × `h`.
pub fn screen(app: App, w: u16, h: u16) -> Headless {
    Headless::new(app, w, h)
}
