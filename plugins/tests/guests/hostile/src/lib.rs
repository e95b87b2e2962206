//! A deliberately hostile provider plugin for the host's containment tests.
//! `configure([("mode", M)])` picks what `encode` does:
//!
//! - `ok`: answers with one local chunk (shows the host keeps serving);
//! - `loop`: spins forever;
//! - `bomb`: allocates memory until it runs out;
//! - `flood`: writes to stdout, stderr and the host log without end;
//! - `trap`: panics;
//! - `ignore-cancel`: spins forever and never polls cancellation;
//! - `cooperative`: spins until the host asks it to stop, then returns.

use std::cell::RefCell;
use std::io::Write;

use smith_plugin_sdk::host;
use smith_plugin_sdk::provider::exports::smith::plugin::provider as wit;

thread_local! {
    static MODE: RefCell<String> = RefCell::new("ok".to_owned());
}

struct Hostile;

fn spin_forever() -> ! {
    let mut x: u64 = 0;
    loop {
        x = std::hint::black_box(x.wrapping_add(1));
    }
}

impl wit::Guest for Hostile {
    fn describe() -> wit::ProviderInfo {
        wit::ProviderInfo {
            id: "hostile".to_owned(),
            models: Vec::new(),
        }
    }

    fn configure(settings: Vec<(String, String)>) -> Result<(), String> {
        for (name, value) in settings {
            if name != "mode" {
                return Err(format!("unknown setting {name:?}"));
            }
            MODE.with(|mode| *mode.borrow_mut() = value);
        }
        Ok(())
    }

    fn encode(_request: wit::Request) -> Result<wit::Exchange, wit::ProviderError> {
        let mode = MODE.with(|mode| mode.borrow().clone());
        match mode.as_str() {
            "loop" | "ignore-cancel" => spin_forever(),
            "bomb" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    let mut block = vec![0u8; 1 << 20];
                    block[0] = 1;
                    hoard.push(std::hint::black_box(block));
                }
            }
            "flood" => {
                let line = "flood ".repeat(1000);
                loop {
                    let _ = std::io::stdout().write_all(line.as_bytes());
                    let _ = std::io::stderr().write_all(line.as_bytes());
                    host::info(&line);
                }
            }
            "trap" => panic!("the hostile plugin panics on purpose"),
            "cooperative" => {
                while !host::cancelled() {
                    std::hint::spin_loop();
                }
                Err(wit::ProviderError {
                    kind: wit::ErrorKind::Transport,
                    message: "cancelled".to_owned(),
                    retry_after_ms: None,
                })
            }
            _ => Ok(wit::Exchange::Local(vec![wit::LocalChunk {
                delay_ms: 0,
                bytes: b"ok".to_vec(),
            }])),
        }
    }

    fn decode(chunk: Vec<u8>) -> Vec<wit::StreamEvent> {
        vec![
            wit::StreamEvent::TextDelta(String::from_utf8_lossy(&chunk).into_owned()),
            wit::StreamEvent::Stop(wit::StopReason::End),
        ]
    }

    fn finish() -> Vec<wit::StreamEvent> {
        Vec::new()
    }

    fn models_request(
        _after: Option<String>,
    ) -> Result<Option<wit::HttpExchange>, wit::ProviderError> {
        Ok(None)
    }

    fn decode_models(_body: Vec<u8>) -> Result<wit::ModelPage, wit::ProviderError> {
        Ok(wit::ModelPage {
            models: Vec::new(),
            next: None,
        })
    }
}

smith_plugin_sdk::provider::export_provider!(Hostile);
