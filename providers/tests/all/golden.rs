//! Each recorded stream decodes into the expected events, stored as golden
//! JSONL files (`SMITH_BLESS=1` rewrites them).

use smith_providers::types::StreamEvent;

use crate::support::{AnyDecoder, check_rules, fixtures, jsonl, root, run};

#[test]
fn recorded_streams_match_their_goldens() {
    let bless = std::env::var_os("SMITH_BLESS").is_some();
    let mut failures = Vec::new();
    for fixture in fixtures() {
        let mut decoder = AnyDecoder::for_folder(fixture.folder);
        let events = run(&mut decoder, &[&fixture.bytes]);
        check_rules(&events)
            .unwrap_or_else(|why| panic!("{}/{}: {why}", fixture.folder, fixture.name));
        let text = jsonl(&events);
        let stem = fixture
            .name
            .rsplit_once('.')
            .map_or(fixture.name.as_str(), |(s, _)| s);
        let path = root()
            .join("golden")
            .join(fixture.folder)
            .join(format!("{stem}.jsonl"));
        if bless {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(expected) if expected == text => {}
            Ok(expected) => failures.push(format!(
                "{}: differs\n--- expected\n{expected}--- got\n{text}",
                path.display()
            )),
            Err(e) => failures.push(format!(
                "{}: {e} (run with SMITH_BLESS=1 to write it)",
                path.display()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn compatible_decoder_agrees_with_openai_chat_on_recorded_streams() {
    for fixture in fixtures().into_iter().filter(|f| f.folder == "openai-chat") {
        let chat = run(
            &mut AnyDecoder::for_folder("openai-chat"),
            &[&fixture.bytes],
        );
        let compatible = run(
            &mut AnyDecoder::for_folder("openai-compatible"),
            &[&fixture.bytes],
        );
        // Identical events; error messages differ only in the vendor name.
        let strip = |events: Vec<StreamEvent>| -> Vec<StreamEvent> {
            events
                .into_iter()
                .map(|event| match event {
                    StreamEvent::Error(mut e) => {
                        e.message.clear();
                        StreamEvent::Error(e)
                    }
                    other => other,
                })
                .collect()
        };
        assert_eq!(strip(chat), strip(compatible), "{}", fixture.name);
    }
}
