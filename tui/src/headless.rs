//! The headless backend: frames rendered into a buffer instead of a
//! terminal, for golden snapshots and scripted key tests.

use bumpalo::Bump;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};

use crate::app::{App, Output};
use crate::buffer::Buffer;
use crate::diff::{DiffOptions, diff};

/// An app drawn into an in-memory screen.
#[derive(Debug)]
pub struct Headless {
    /// The model.
    pub app: App,
    screen: Buffer,
    previous: Buffer,
    bump: Bump,
    /// Bytes the last frame would have written to a terminal.
    pub last_frame_bytes: usize,
    out: Vec<u8>,
}

impl Headless {
    /// A `width` × `height` screen around `app`.
    pub fn new(app: App, width: u16, height: u16) -> Self {
        Self {
            app,
            screen: Buffer::new(width, height),
            previous: Buffer::new(width, height),
            bump: Bump::new(),
            last_frame_bytes: 0,
            out: Vec::new(),
        }
    }

    /// Draws a frame; returns the screen.
    pub fn frame(&mut self) -> &Buffer {
        let (w, h) = (self.screen.width(), self.screen.height());
        self.bump.reset();
        self.app.prepare(w, h);
        std::mem::swap(&mut self.previous, &mut self.screen);
        if self.screen.width() != w || self.screen.height() != h {
            self.screen.resize(w, h);
        }
        self.app.render(&mut self.screen, &self.bump);
        self.out.clear();
        diff(
            Some(&self.previous),
            &self.screen,
            &DiffOptions::default(),
            &mut self.out,
        );
        self.last_frame_bytes = self.out.len();
        &self.screen
    }

    /// The screen as text after drawing a frame.
    pub fn text(&mut self) -> String {
        self.frame().to_text()
    }

    /// Resizes the screen (as a terminal resize would).
    pub fn resize(&mut self, width: u16, height: u16) {
        self.app.handle(&Event::Resize(width, height));
        self.screen.resize(width, height);
        self.previous.resize(width, height);
    }

    /// Sends one event.
    pub fn event(&mut self, event: &Event) -> Option<Output> {
        self.app.handle(event)
    }

    /// Sends a key with modifiers.
    pub fn key(&mut self, code: KeyCode, mods: KeyModifiers) -> Option<Output> {
        self.app.handle(&Event::Key(KeyEvent::new(code, mods)))
    }

    /// Types `text` key by key (`\n` becomes Enter).
    pub fn type_text(&mut self, text: &str) -> Vec<Output> {
        let mut outs = Vec::new();
        for c in text.chars() {
            let code = if c == '\n' {
                KeyCode::Enter
            } else {
                KeyCode::Char(c)
            };
            if let Some(o) = self.key(code, KeyModifiers::NONE) {
                outs.push(o);
            }
        }
        outs
    }
}
