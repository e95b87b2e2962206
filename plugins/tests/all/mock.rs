//! smith/mock as a plugin behaves exactly like the native scripted provider.

use smith_engine::agent::compact::summary_request;
use smith_engine::provider::scripted::parse_script;
use smith_engine::provider::{
    ContentBlock, Exchange, Message, Provider, Request, StopReason, StreamEvent, ToolCall,
};
use smith_plugins::builtin::{MOCK, mock_provider};
use smith_plugins::{
    InstantiateError, Limits, ProviderComponent, Runtime, compile_count_on_this_thread,
};
use smith_testkit::ScriptedProvider;

fn request(messages: Vec<Message>) -> Request {
    Request {
        model: "mock-1".into(),
        system: Some("be brief".into()),
        messages,
        tools: Vec::new(),
        max_output_tokens: None,
    }
}

/// Runs one request through a provider: the exchange and the decoded
/// events (finish included).
fn play(
    provider: &mut dyn Provider,
    request: &Request,
) -> (Result<Exchange, String>, Vec<StreamEvent>) {
    match provider.encode(request) {
        Ok(exchange) => {
            let mut events = Vec::new();
            if let Exchange::Local { chunks } = &exchange {
                for chunk in chunks {
                    events.extend(provider.decode(&chunk.bytes));
                }
            }
            events.extend(provider.finish());
            (Ok(exchange), events)
        }
        Err(err) => (Err(err.to_string()), Vec::new()),
    }
}

const SCRIPT: &str = r#"[
  [{"text":"hi "},{"delay_ms":5},{"thinking":{"text":"t","signature":"0aff"}},
   {"thinking":"plain"},
   {"tool_call":{"name":"ls","arguments":{"path":".","z":1,"a":[1,2]}}},
   {"tool_call":{"id":"x","name":"read"}},
   {"usage":{"input":1,"output":null}},{"stop":{"reason":"tool_use"}}],
  [{"error":{"kind":"rate_limit","message":"slow","retry_after_ms":9}}],
  [{"event":{"type":"tool_call_start","id":"c","name":"bash"}},{"delay_ms":7}],
  [{"text":"end"},{"stop":{"reason":"end"}}]
]"#;

#[test]
fn scripts_play_identically_natively_and_as_a_plugin() {
    let mut native = ScriptedProvider::new(parse_script(SCRIPT, "test.json").unwrap());
    let mut wasm = mock_provider(Some((SCRIPT, "test.json")), None, Limits::default()).unwrap();
    assert_eq!(native.describe(), wasm.describe());
    let conversation = request(vec![Message::user("go")]);
    // Four scripted responses, then one request too many.
    for round in 0..5 {
        let a = play(&mut native, &conversation);
        let b = play(&mut wasm, &conversation);
        assert_eq!(a, b, "round {round} differs");
        if round < 4 {
            assert!(a.0.is_ok(), "round {round} should be scripted");
        } else {
            assert!(a.0.unwrap_err().contains("has 4 response(s)"));
        }
    }
}

#[test]
fn bad_scripts_fail_with_the_same_message() {
    let native = parse_script("[[{\"nope\":1}]]", "bad.json")
        .unwrap_err()
        .to_string();
    let wasm = mock_provider(
        Some(("[[{\"nope\":1}]]", "bad.json")),
        None,
        Limits::default(),
    )
    .unwrap_err();
    assert_eq!(wasm, InstantiateError::Rejected(native.clone()));
    // Through the plain constructor the refusal names the plugin.
    let component = ProviderComponent::load("smith/mock", MOCK, None, Limits::default()).unwrap();
    let settings = [
        ("script".to_owned(), "[[{\"nope\":1}]]".to_owned()),
        ("origin".to_owned(), "bad.json".to_owned()),
    ];
    let plain = component.instantiate(&settings).unwrap_err();
    assert_eq!(
        plain.message,
        format!("the plugin rejected its settings: {native}")
    );
    assert_eq!(plain.plugin, "smith/mock");
}

/// The object form with scripted summaries: summary requests take the
/// `summaries` in order, apart from the ordinary `responses`, and each list
/// runs out with the same error natively and as a plugin.
const OBJECT_SCRIPT: &str = r#"{
  "responses": [[{"text":"answer"},{"stop":{"reason":"end"}}],
                [{"text":"again"},{"delay_ms":3},{"stop":{"reason":"end"}}]],
  "summaries": [[{"text":"the summary"},{"usage":{"input":7,"output":2}},{"stop":{"reason":"end"}}]]
}"#;

fn history() -> Vec<Message> {
    vec![
        Message::User {
            text: "fix the parser".into(),
            media: Vec::new(),
        },
        Message::Assistant {
            content: vec![ContentBlock::Text {
                text: "done".into(),
            }],
            stop: StopReason::End,
        },
        Message::User {
            text: "and the tests".into(),
            media: Vec::new(),
        },
    ]
}

fn text_of(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn object_scripts_with_summaries_play_identically_natively_and_as_a_plugin() {
    let mut native = ScriptedProvider::new(parse_script(OBJECT_SCRIPT, "o.json").unwrap());
    let mut wasm = mock_provider(Some((OBJECT_SCRIPT, "o.json")), None, Limits::default()).unwrap();
    let summary = summary_request("mock-1", &history(), Some("keep paths"), None);
    let ordinary = request(vec![Message::user("go")]);
    // Interleaved: summary, ordinary, summary (one too many), ordinary,
    // ordinary (one too many).
    let order = [&summary, &ordinary, &summary, &ordinary, &ordinary];
    let mut outcomes = Vec::new();
    for (round, req) in order.into_iter().enumerate() {
        let a = play(&mut native, req);
        let b = play(&mut wasm, req);
        assert_eq!(a, b, "round {round} differs");
        outcomes.push(a);
    }
    assert_eq!(text_of(&outcomes[0].1), "the summary");
    assert_eq!(text_of(&outcomes[1].1), "answer");
    let exhausted = outcomes[2].0.clone().unwrap_err();
    assert!(
        exhausted.contains("has 1 summary response(s) but the agent sent summary request 2"),
        "{exhausted}"
    );
    assert_eq!(text_of(&outcomes[3].1), "again");
    let exhausted = outcomes[4].0.clone().unwrap_err();
    assert!(
        exhausted.contains("has 2 response(s) but the agent sent request 3"),
        "{exhausted}"
    );
}

#[test]
fn generated_summaries_are_identical_natively_and_as_a_plugin() {
    // A list script and the demo have no scripted summaries: both answer a
    // summary request with the generated deterministic summary, with and
    // without custom instructions, and consume no scripted response.
    let list = r#"[[{"text":"only"},{"stop":{"reason":"end"}}]]"#;
    let with_focus = summary_request("mock-1", &history(), Some("keep paths"), None);
    let without = summary_request("mock-1", &history(), None, Some(100));
    let mut native = ScriptedProvider::new(parse_script(list, "l.json").unwrap());
    let mut wasm = mock_provider(Some((list, "l.json")), None, Limits::default()).unwrap();
    let mut native_demo = ScriptedProvider::demo();
    let mut wasm_demo = mock_provider(None, None, Limits::default()).unwrap();
    for req in [&with_focus, &without, &with_focus] {
        let a = play(&mut native, req);
        assert_eq!(a, play(&mut wasm, req));
        assert_eq!(a, play(&mut native_demo, req));
        assert_eq!(a, play(&mut wasm_demo, req));
    }
    assert_eq!(
        text_of(&play(&mut wasm, &with_focus).1),
        "Mock summary of 3 message(s). The user asked: \"fix the parser\", \"and the tests\". Focus: keep paths"
    );
    // The one scripted response is still there for the ordinary request.
    let ordinary = request(vec![Message::user("go")]);
    let a = play(&mut native, &ordinary);
    assert_eq!(a, play(&mut wasm, &ordinary));
    assert_eq!(text_of(&a.1), "only");
}

#[test]
fn bad_object_scripts_fail_with_the_same_message() {
    for bad in [
        r#"{"responses": [], "summary": []}"#,
        r#"{"summaries": []}"#,
        r#"{"responses": [[{"txt": "hi"}]]}"#,
        r#"{"responses": [], "summaries": [[{"stop": {"reason": "later"}}]]}"#,
        r#"  {"responses": {}}"#,
    ] {
        let native = parse_script(bad, "o.json").unwrap_err().to_string();
        assert!(
            native.contains("mock script o.json is not valid"),
            "{native}"
        );
        let wasm = mock_provider(Some((bad, "o.json")), None, Limits::default()).unwrap_err();
        assert_eq!(wasm, InstantiateError::Rejected(native), "script {bad}");
    }
}

#[test]
fn the_demo_plays_identically_through_a_whole_conversation() {
    let mut native = ScriptedProvider::demo();
    let mut wasm = mock_provider(None, None, Limits::default()).unwrap();
    let mut messages = vec![Message::User {
        text: "show me".into(),
        media: Vec::new(),
    }];
    let results = [
        ("ls", "README.md\nsrc/\nCargo.toml\n", false),
        ("read", "# smith\n\nA fast harness.", false),
    ];
    for (name, content, is_error) in results {
        let req = request(messages.clone());
        let (a, b) = (play(&mut native, &req), play(&mut wasm, &req));
        assert_eq!(a, b);
        let events = a.1;
        let call = events
            .iter()
            .find_map(|e| match e {
                StreamEvent::ToolCallStart { id, .. } => Some(id.clone()),
                _ => None,
            })
            .expect("the demo calls a tool");
        messages.push(Message::Assistant {
            content: vec![
                ContentBlock::Text { text: "x".into() },
                ContentBlock::Thinking {
                    text: "hmm".into(),
                    signature: Some(smith_engine::provider::OpaqueBytes(vec![1, 2])),
                },
                ContentBlock::ToolCall(ToolCall {
                    id: call.clone(),
                    name: name.into(),
                    arguments: serde_json::json!({"path": ".", "b": [true, null]}),
                }),
            ],
            stop: StopReason::ToolUse,
        });
        messages.push(Message::ToolResult {
            call_id: call,
            name: name.into(),
            content: content.into(),
            is_error,
            media: Vec::new(),
        });
    }
    let req = request(messages);
    let (a, b) = (play(&mut native, &req), play(&mut wasm, &req));
    assert_eq!(a, b);
    assert!(matches!(
        a.1.last(),
        Some(StreamEvent::Stop {
            reason: StopReason::End
        })
    ));
}

#[test]
fn components_compile_once_then_load_from_the_cache() {
    // A component the build did not precompile (a user plugin's): the
    // first load compiles it into the cache, later loads read the cache.
    let hostile = crate::guest("smith_plugin_hostile.wasm");
    let cache = tempfile::tempdir().unwrap();
    let start = compile_count_on_this_thread();
    ProviderComponent::load(
        "test/hostile",
        &hostile,
        Some(cache.path()),
        Limits::default(),
    )
    .unwrap();
    assert_eq!(
        compile_count_on_this_thread(),
        start + 1,
        "a cold cache compiles once"
    );
    let runtime = Runtime::global().unwrap();
    let digest = {
        use sha2::Digest;
        smith_plugins::runtime::hex(&sha2::Sha256::digest(&hostile))
    };
    let file = runtime.cache_file(cache.path(), &digest);
    assert!(file.is_file(), "no cache file at {}", file.display());
    assert!(
        file.starts_with(
            cache
                .path()
                .join("plugins")
                .join(runtime.compatibility_key())
        )
    );
    for _ in 0..20 {
        let component = ProviderComponent::load(
            "test/hostile",
            &hostile,
            Some(cache.path()),
            Limits::default(),
        )
        .unwrap();
        let provider = component
            .instantiate(&[("mode".to_owned(), "ok".to_owned())])
            .unwrap();
        assert_eq!(provider.describe().id, "hostile");
    }
    assert_eq!(
        compile_count_on_this_thread(),
        start + 1,
        "a warm cache never compiles"
    );
}

#[test]
fn precompiled_artifacts_are_refused() {
    let runtime = Runtime::global().unwrap();
    let compiled = runtime
        .engine()
        .precompile_component(MOCK.bytes().unwrap())
        .unwrap();
    let err = ProviderComponent::load("test/precompiled", &compiled, None, Limits::default())
        .unwrap_err();
    assert_eq!(err.kind, smith_plugins::ErrorKind::Invalid);
    assert!(err.message.contains("precompiled"), "{err}");
}
