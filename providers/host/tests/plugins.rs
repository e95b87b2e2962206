//! The built-in vendor provider plugins against the native adapters they
//! wrap: every recorded stream decodes, split at many points, into exactly
//! the native decoder's events; representative requests encode into
//! identical HTTP exchanges (or identical errors); and `LiveProvider`
//! reuses one plugin instance per target and treats a plugin failure as a
//! transient provider error naming the plugin.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test binary: a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use smith_auth::Resolver;
use smith_catalog::failover::Policy;
use smith_catalog::{Catalog, ModelInfo as CatalogModel, Routes};
use smith_engine::provider::{
    ContentBlock, Exchange, HttpExchange, Message, OpaqueBytes, Provider, ProviderErrorKind,
    Request, StopReason, StreamEvent, ToolCall, ToolSpec,
};
use smith_plugins::{Limits, WasmProvider};
use smith_provider_host::{LiveProvider, Setup, Vendor};
use smith_providers::{
    Capabilities, Config, Decoder, ThinkingLevel, anthropic, google, openai, openai_compatible,
};

// ---------------------------------------------------------------------------
// Helpers.

fn plugin(name: &str, settings: &[(String, String)]) -> WasmProvider {
    smith_plugins::builtin::vendor_component(name, None, Limits::default())
        .unwrap()
        .instantiate(settings)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn owned(settings: &[(&str, &str)]) -> Vec<(String, String)> {
    settings
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// One way to reach a recorded stream's folder: the plugin and its extra
/// settings, and the native decoder it must agree with.
struct Case {
    folder: &'static str,
    plugin: &'static str,
    settings: Vec<(String, String)>,
    native: fn() -> Box<dyn Decoder>,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            folder: "anthropic",
            plugin: "smith/anthropic",
            settings: Vec::new(),
            native: || Box::new(anthropic::StreamDecoder::new()),
        },
        Case {
            folder: "google",
            plugin: "smith/google",
            settings: Vec::new(),
            native: || Box::new(google::StreamDecoder::new()),
        },
        Case {
            folder: "openai-responses",
            plugin: "smith/openai",
            settings: Vec::new(),
            native: || Box::new(openai::StreamDecoder::new()),
        },
        Case {
            folder: "openai-chat",
            plugin: "smith/openai",
            settings: owned(&[("api", "chat")]),
            native: || Box::new(openai::ChatStreamDecoder::new()),
        },
        Case {
            folder: "openai-chat",
            plugin: "smith/openai-compatible",
            settings: owned(&[("base-url", "http://127.0.0.1:9/v1")]),
            native: || Box::new(openai_compatible::StreamDecoder::new()),
        },
    ]
}

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

/// The recorded streams of `folder`, by file name.
fn recordings(folder: &str) -> Vec<(String, Vec<u8>)> {
    let dir = fixture_dir().join(folder);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let bytes = std::fs::read(dir.join(&name)).unwrap();
            (name, bytes)
        })
        .collect()
}

/// The ways a body is split into chunks: whole, fixed sizes from one byte
/// up, and cuts at a third and two thirds.
fn splits(body: &[u8]) -> Vec<(String, Vec<&[u8]>)> {
    let mut out = vec![("whole".to_owned(), vec![body])];
    for size in [1, 2, 7, 64, 1021] {
        out.push((format!("{size}-byte chunks"), body.chunks(size).collect()));
    }
    let (a, b) = (body.len() / 3, body.len() * 2 / 3);
    out.push((
        format!("cut at {a} and {b}"),
        vec![&body[..a], &body[a..b], &body[b..]],
    ));
    out
}

fn user_request(model: &str) -> Request {
    Request {
        model: model.into(),
        system: None,
        messages: vec![Message::user("hi")],
        tools: Vec::new(),
        max_output_tokens: None,
    }
}

fn json_of<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap()
}

// ---------------------------------------------------------------------------
// Decoding.

#[test]
fn every_recorded_stream_decodes_through_the_plugin_exactly_as_natively() {
    let mut checked = 0;
    for case in cases() {
        let recorded = recordings(case.folder);
        assert!(!recorded.is_empty(), "no recordings in {}", case.folder);
        // One instance for every body: each encode starts a fresh decoder.
        let mut settings = case.settings.clone();
        settings.push(("tool-use".into(), "true".into()));
        let mut wasm = plugin(case.plugin, &settings);
        for (name, body) in &recorded {
            for (how, chunks) in splits(body) {
                let mut native = (case.native)();
                let mut expected = Vec::new();
                for chunk in &chunks {
                    expected.extend(native.decode(chunk));
                }
                expected.extend(native.finish());
                let exchange = wasm.encode(&user_request("m")).unwrap();
                assert!(matches!(exchange, Exchange::Http(_)), "{}", case.plugin);
                let mut got = Vec::new();
                for chunk in &chunks {
                    got.extend(wasm.decode(chunk));
                }
                got.extend(wasm.finish());
                assert_eq!(
                    json_of(&got),
                    json_of(&expected),
                    "{} on {}/{name}, {how}",
                    case.plugin,
                    case.folder
                );
                assert_eq!(
                    got.iter()
                        .filter(|e| matches!(e, StreamEvent::Stop { .. } | StreamEvent::Error(_)))
                        .count(),
                    1,
                    "{}/{name}: one terminal event",
                    case.folder
                );
                checked += 1;
            }
        }
    }
    // 18 anthropic + 8 google + 9 responses + 2 x 20 chat streams, 7 splits each.
    assert_eq!(checked, (18 + 8 + 9 + 2 * 20) * 7);
}

#[test]
fn a_new_encode_drops_the_half_decoded_body_of_the_last() {
    let (_, body) = recordings("anthropic")
        .into_iter()
        .find(|(name, _)| name == "basic_response.txt")
        .unwrap();
    let mut wasm = plugin("smith/anthropic", &[]);
    let mut native = anthropic::StreamDecoder::new();
    let mut expected = native.decode(&body);
    expected.extend(native.finish());
    wasm.encode(&user_request("m")).unwrap();
    let half = wasm.decode(&body[..body.len() / 2]);
    assert!(!half.is_empty(), "the first half carries events");
    // The second request's body decodes from a clean state.
    wasm.encode(&user_request("m")).unwrap();
    let mut got = wasm.decode(&body);
    got.extend(wasm.finish());
    assert_eq!(json_of(&got), json_of(&expected));
    // Calls after the terminal event and after finish return nothing.
    assert!(wasm.finish().is_empty());
    assert!(wasm.decode(b"data: {}\n\n").is_empty());
}

#[test]
fn a_body_before_any_encode_is_an_error_naming_the_plugin() {
    let mut wasm = plugin("smith/google", &[]);
    let events = wasm.decode(b"data: {}\n\n");
    let [StreamEvent::Error(error)] = events.as_slice() else {
        panic!("{events:?}");
    };
    assert_eq!(error.kind, ProviderErrorKind::MalformedStream);
    assert!(
        error
            .message
            .starts_with("smith/google got a response body chunk with no request encoded"),
        "{}",
        error.message
    );
    assert!(wasm.finish().is_empty());
}

// ---------------------------------------------------------------------------
// Encoding.

/// The assistant message a recorded stream assembles into (text merged,
/// thinking merged with its signature pieces, tool calls with their
/// arguments), so requests carry real signatures and call ids.
fn assistant_from(events: &[smith_providers::StreamEvent]) -> Message {
    use smith_providers::StreamEvent as E;
    let mut content: Vec<ContentBlock> = Vec::new();
    let mut calls: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut order = Vec::new();
    let mut stop = StopReason::End;
    for event in events {
        match event {
            E::TextDelta { text } => match content.last_mut() {
                Some(ContentBlock::Text { text: t }) => t.push_str(text),
                _ => content.push(ContentBlock::Text { text: text.clone() }),
            },
            E::ThinkingDelta { text, signature } => {
                let piece = signature.as_ref().map(|s| s.0.clone());
                match content.last_mut() {
                    Some(ContentBlock::Thinking {
                        text: t,
                        signature: s,
                    }) => {
                        t.push_str(text);
                        if let Some(piece) = piece {
                            s.get_or_insert_with(OpaqueBytes::default).0.extend(piece);
                        }
                    }
                    _ => content.push(ContentBlock::Thinking {
                        text: text.clone(),
                        signature: piece.map(OpaqueBytes),
                    }),
                }
            }
            E::ToolCallStart { id, name } => {
                order.push(id.clone());
                calls.insert(id.clone(), (name.clone(), String::new()));
            }
            E::ToolCallDelta { id, arguments } => {
                calls.get_mut(id).unwrap().1.push_str(arguments);
            }
            E::Stop { reason } => {
                stop = serde_json::from_value(json_of(reason)).unwrap();
            }
            _ => {}
        }
    }
    for id in order {
        let (name, arguments) = calls.remove(&id).unwrap();
        let arguments = serde_json::from_str(&arguments).unwrap_or(Value::String(arguments));
        content.push(ContentBlock::ToolCall(ToolCall {
            id,
            name,
            arguments,
        }));
    }
    Message::Assistant { content, stop }
}

fn decoded(folder: &str, name: &str, mut decoder: impl Decoder) -> Message {
    let (_, body) = recordings(folder)
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("{folder}/{name}"));
    let mut events = decoder.decode(&body);
    events.extend(decoder.finish());
    assistant_from(&events)
}

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "read".into(),
            description: "Read a file.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"path": {"type": "string"}, "offset": {"type": "integer", "minimum": 0}},
                "required": ["path"],
            }),
        },
        ToolSpec {
            name: "bash".into(),
            description: "Run a command; ünïcödé and \"quotes\".".into(),
            parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        },
    ]
}

/// A conversation with everything a request can carry: a system prompt,
/// users, assistant text, signed and unsigned thinking (from real
/// recordings of `folder`), tool calls whose arguments hold floats,
/// unicode and text that is not JSON, tool results (one an error).
fn conversation(recorded: Option<Message>) -> Request {
    let mut messages = vec![Message::User {
        text: "List the files, then read the biggest.".into(),
        media: Vec::new(),
    }];
    if let Some(message) = recorded {
        messages.push(message);
        messages.push(Message::User {
            text: "go on".into(),
            media: Vec::new(),
        });
    }
    messages.push(Message::Assistant {
        content: vec![
            ContentBlock::Thinking {
                text: "unsigned thought".into(),
                signature: None,
            },
            ContentBlock::Text {
                text: "Reading.".into(),
            },
            ContentBlock::ToolCall(ToolCall {
                id: "call_1".into(),
                name: "read".into(),
                arguments: json!({"path": "src/ä.rs", "offset": 3, "ratio": 0.1, "tiny": 1.0e-7, "big": 123_456_789.123_456_78}),
            }),
            ContentBlock::ToolCall(ToolCall {
                id: "call_2".into(),
                name: "bash".into(),
                arguments: Value::String("{not json".into()),
            }),
        ],
        stop: StopReason::ToolUse,
    });
    messages.push(Message::ToolResult {
        call_id: "call_1".into(),
        name: "read".into(),
        content: "fn main() {}\n".into(),
        is_error: false,
        media: Vec::new(),
    });
    messages.push(Message::ToolResult {
        call_id: "call_2".into(),
        name: "bash".into(),
        content: "arguments are not JSON".into(),
        is_error: true,
        media: Vec::new(),
    });
    Request {
        model: "model-x".into(),
        system: Some("You are terse.\nUse tools.".into()),
        messages,
        tools: tools(),
        max_output_tokens: Some(40_000),
    }
}

fn configs() -> Vec<(&'static str, Config)> {
    let all = Capabilities {
        tool_use: true,
        thinking: true,
        prompt_cache: true,
        max_output_tokens: Some(32_000),
    };
    vec![
        ("nothing advertised", Config::default()),
        (
            "tools only",
            Config::with_capabilities(Capabilities {
                tool_use: true,
                ..Capabilities::default()
            }),
        ),
        (
            "everything, medium thinking",
            Config {
                thinking: Some(ThinkingLevel::Medium),
                ..Config::with_capabilities(all)
            },
        ),
        (
            "high thinking, small output limit",
            Config {
                thinking: Some(ThinkingLevel::High),
                ..Config::with_capabilities(Capabilities {
                    max_output_tokens: Some(2_000),
                    ..all
                })
            },
        ),
        (
            "low thinking, base URL and credential overrides",
            Config {
                base_url: Some("http://127.0.0.1:8080/v1/".into()),
                credential: Some("proxy.team_key".into()),
                thinking: Some(ThinkingLevel::Low),
                capabilities: all,
            },
        ),
    ]
}

type NativeEncode = fn(
    &smith_providers::Request,
    &Config,
) -> Result<smith_providers::HttpExchange, smith_providers::ProviderError>;

fn assert_same_encoding(
    plugin_name: &str,
    extra: &[(&str, &str)],
    native: NativeEncode,
    request: &Request,
    what: &str,
) {
    for (label, config) in configs() {
        let mut settings = config.settings();
        settings.extend(owned(extra));
        let mut wasm = plugin(plugin_name, &settings);
        let vendor_request: smith_providers::Request =
            serde_json::from_value(json_of(request)).unwrap();
        let expected = native(&vendor_request, &config);
        let got = wasm.encode(request);
        match (got, expected) {
            (Ok(Exchange::Http(got)), Ok(expected)) => {
                let HttpExchange {
                    method,
                    url,
                    headers,
                    body,
                } = got;
                assert_eq!(method, expected.method, "{plugin_name}, {what}, {label}");
                assert_eq!(url, expected.url, "{plugin_name}, {what}, {label}");
                assert_eq!(headers, expected.headers, "{plugin_name}, {what}, {label}");
                assert_eq!(
                    String::from_utf8(body).unwrap(),
                    String::from_utf8(expected.body).unwrap(),
                    "{plugin_name}, {what}, {label}: identical body bytes"
                );
            }
            (Err(got), Err(expected)) => {
                assert_eq!(
                    json_of(&got),
                    json_of(&expected),
                    "{plugin_name}, {what}, {label}"
                );
            }
            (got, expected) => {
                panic!("{plugin_name}, {what}, {label}: plugin {got:?}, native {expected:?}")
            }
        }
    }
}

#[test]
fn representative_requests_encode_into_identical_exchanges() {
    let anthropic_thinking = decoded(
        "anthropic",
        "thinking_stream.sse",
        anthropic::StreamDecoder::new(),
    );
    assert!(
        matches!(&anthropic_thinking, Message::Assistant { content, .. }
            if content.iter().any(|b| matches!(b, ContentBlock::Thinking { signature: Some(_), .. }))),
        "the recording carries signed thinking"
    );
    let responses = decoded(
        "openai-responses",
        "reasoning_usage_stream.sse",
        openai::StreamDecoder::new(),
    );
    let gemini = decoded("google", "text_stream.sse", google::StreamDecoder::new());
    let chat = decoded(
        "openai-chat",
        "2018feb66ae13fcf5333d61b95849decc68d3f63bd38172889367e1afb1e04f7.bin",
        openai::ChatStreamDecoder::new(),
    );
    let bare = Request {
        tools: Vec::new(),
        system: None,
        max_output_tokens: None,
        ..user_request("model-y")
    };
    let mut requests = vec![
        ("a bare user message", bare),
        ("the full conversation", conversation(None)),
    ];
    for (what, recorded) in [
        ("with recorded Anthropic thinking", anthropic_thinking),
        ("with recorded OpenAI reasoning", responses),
        ("with a recorded Gemini answer", gemini),
        ("with a recorded Chat tool call", chat),
    ] {
        requests.push((what, conversation(Some(recorded))));
    }
    for (what, request) in &requests {
        assert_same_encoding("smith/anthropic", &[], anthropic::encode, request, what);
        assert_same_encoding("smith/openai", &[], openai::encode, request, what);
        assert_same_encoding(
            "smith/openai",
            &[("api", "chat")],
            openai::encode_chat,
            request,
            what,
        );
        assert_same_encoding("smith/google", &[], google::encode, request, what);
        assert_same_encoding(
            "smith/openai-compatible",
            &[],
            openai_compatible::encode,
            request,
            what,
        );
    }
}

#[test]
fn settings_are_checked_and_never_echo_a_secret() {
    let component =
        smith_plugins::builtin::vendor_component("smith/anthropic", None, Limits::default())
            .unwrap();
    let rejected = |settings: &[(&str, &str)]| -> String {
        match component.instantiate_checked(&owned(settings)) {
            Err(smith_plugins::InstantiateError::Rejected(message)) => message,
            other => panic!("{settings:?} accepted: {other:?}"),
        }
    };
    let message = rejected(&[("api", "chat")]);
    assert!(
        message.starts_with(
            "smith/anthropic has no setting \"api\"; its settings are \"base-url\", \"credential\""
        ),
        "{message}"
    );
    let secret = "sk-ant-api03-abcdefghijklmnop";
    let message = rejected(&[("credential", secret)]);
    assert!(!message.contains(secret), "{message}");
    assert!(message.contains("provider.slot"), "{message}");
    let message = rejected(&[("tool-use", "true"), ("tool-use", "false")]);
    assert!(message.contains("\"tool-use\" twice"), "{message}");
    let openai =
        smith_plugins::builtin::vendor_component("smith/openai", None, Limits::default()).unwrap();
    match openai.instantiate_checked(&owned(&[("api", "completions")])) {
        Err(smith_plugins::InstantiateError::Rejected(message)) => assert_eq!(
            message,
            "smith/openai setting \"api\" is \"completions\"; give one of \"responses\", \"chat\""
        ),
        other => panic!("{other:?}"),
    }
    let err = smith_plugins::builtin::vendor_component("smith/mock", None, Limits::default())
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("\"smith/mock\" is not a built-in vendor provider plugin"),
        "{err}"
    );
    // describe: the provider id and its default model.
    let wasm = plugin("smith/google", &[]);
    let info = wasm.describe();
    assert_eq!(info.id, "google");
    assert_eq!(info.models[0].id, google::DEFAULT_MODEL);
    assert!(
        plugin("smith/openai-compatible", &[])
            .describe()
            .models
            .is_empty()
    );
}

// ---------------------------------------------------------------------------
// LiveProvider over the plugins.

fn setup() -> Setup {
    let catalog = Catalog::new(smith_catalog::bundled().unwrap());
    let mut a = CatalogModel::new("openai-compatible", "a");
    a.tools = Some(true);
    let mut b = a.clone();
    b.id = "b".into();
    catalog.set_user(vec![a, b]);
    let resolver = Resolver::new(smith_provider_host::builtin_slots()).env(|_| None);
    let mut base_urls = BTreeMap::new();
    base_urls.insert(
        "openai-compatible".to_owned(),
        "http://127.0.0.1:9/v1".to_owned(),
    );
    Setup {
        snapshot: catalog.snapshot(),
        routes: Routes::new().group("main", ["openai-compatible/a", "openai-compatible/b"]),
        resolver: Arc::new(resolver),
        base_urls,
        policy: Policy::default(),
        thinking: smith_provider_host::ThinkingDial::default(),
        plugin_settings: BTreeMap::new(),
        learned: None,
    }
}

fn model_of(exchange: &Exchange) -> String {
    let Exchange::Http(http) = exchange else {
        panic!("expected an HTTP exchange");
    };
    let body: Value = serde_json::from_slice(&http.body).unwrap();
    body["model"].as_str().unwrap().to_owned()
}

const CHAT_BODY: &[u8] = b"data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

#[test]
fn one_plugin_instance_per_target_created_on_first_use_and_reused() {
    let mut live = LiveProvider::new(setup(), Some(Vendor::OpenAiCompatible), Some("main"))
        .unwrap()
        .with_plugins(None, Limits::default());
    assert_eq!(
        live.plugin_instances(),
        0,
        "nothing is made before a request"
    );
    let request = user_request("main");
    for _ in 0..3 {
        assert_eq!(model_of(&live.encode(&request).unwrap()), "a");
        let mut events = live.decode(CHAT_BODY);
        events.extend(live.finish());
        assert_eq!(
            json_of(&events),
            json!([{"type": "text_delta", "text": "hi"}, {"type": "stop", "reason": "end"}])
        );
    }
    assert_eq!(live.plugin_instances(), 1);
    let mut limited = smith_engine::provider::ProviderError::new(ProviderErrorKind::RateLimit, "x");
    assert_eq!(live.recover(&mut limited), Some(Duration::ZERO));
    assert_eq!(model_of(&live.encode(&request).unwrap()), "b");
    assert_eq!(live.plugin_instances(), 2, "the second target has its own");
    // The interrupter reaches the instances; with no call in flight it
    // changes nothing.
    let interrupt = live.interrupter().unwrap();
    interrupt();
    let mut events = live.decode(CHAT_BODY);
    events.extend(live.finish());
    assert_eq!(events.len(), 2, "{events:?}");
    // A rate limit without a hint and no target left: b again after the
    // backoff, three times; then give up, and the next request starts at a
    // again, on a's instance.
    for wait in [500, 1000, 2000] {
        assert_eq!(
            live.recover(&mut limited),
            Some(Duration::from_millis(wait))
        );
        assert_eq!(model_of(&live.encode(&request).unwrap()), "b");
    }
    assert_eq!(live.recover(&mut limited), None);
    assert_eq!(model_of(&live.encode(&request).unwrap()), "a");
    assert_eq!(live.plugin_instances(), 2);
}

#[test]
fn a_plugin_failure_is_transient_names_the_plugin_and_the_retry_gets_a_fresh_instance() {
    // Room for the instance and a request, not for a 16 MiB body chunk.
    let limits = Limits {
        memory_bytes: 8 << 20,
        ..Limits::default()
    };
    let mut live = LiveProvider::new(setup(), Some(Vendor::OpenAiCompatible), Some("a"))
        .unwrap()
        .with_plugins(None, limits);
    let request = user_request("a");
    live.encode(&request).unwrap();
    let flood = vec![b' '; 16 << 20];
    let events = live.decode(&flood);
    let [StreamEvent::Error(error)] = events.as_slice() else {
        panic!("{events:?}");
    };
    assert_eq!(error.kind, ProviderErrorKind::MalformedStream);
    assert!(
        error
            .message
            .starts_with("plugin smith/openai-compatible (call decode): "),
        "{}",
        error.message
    );
    let mut error = error.clone();
    assert_eq!(
        live.recover(&mut error),
        Some(Duration::from_millis(500)),
        "transient: retried after the first backoff"
    );
    assert_eq!(model_of(&live.encode(&request).unwrap()), "a");
    assert_eq!(live.plugin_instances(), 2, "a fresh instance for the retry");
    let mut events = live.decode(CHAT_BODY);
    events.extend(live.finish());
    assert_eq!(events.len(), 2, "{events:?}");
}

#[test]
fn settings_the_plugin_refuses_fail_the_request_naming_the_plugin_and_target() {
    let mut s = setup();
    s.base_urls.insert(
        "openai-compatible".to_owned(),
        "localhost:11434/v1".to_owned(),
    );
    let mut live = LiveProvider::new(s, Some(Vendor::OpenAiCompatible), Some("a")).unwrap();
    let mut error = live.encode(&user_request("a")).unwrap_err();
    assert_eq!(error.kind, ProviderErrorKind::InvalidRequest);
    assert!(
        error.message.starts_with(
            "plugin smith/openai-compatible refused the settings of `openai-compatible/a`: smith/openai-compatible: setting \"base-url\" is \"localhost:11434/v1\", which is not an http:// or https:// URL"
        ),
        "{}",
        error.message
    );
    assert_eq!(live.recover(&mut error), None, "not retried");
}

/// A request of the largest body the HTTP engine sends (16 MiB) less 64 KiB
/// for the envelope: one user message of that many bytes.
fn request_near_the_bound() -> (Request, usize) {
    let bound = usize::try_from(smith_net::Limits::default().max_request_body).unwrap();
    let text = "word ".repeat((bound - (64 << 10)) / 5);
    let request = Request {
        messages: vec![Message::User {
            text,
            media: Vec::new(),
        }],
        ..user_request("model-y")
    };
    (request, bound)
}

#[test]
fn built_in_provider_plugins_encode_a_request_near_the_http_bound_within_their_limits() {
    let (request, bound) = request_near_the_bound();
    let limits = smith_provider_host::provider_plugin_limits(Limits::default());
    for (name, settings) in [
        (
            "smith/openai-compatible",
            owned(&[("base-url", "http://localhost:11434/v1")]),
        ),
        ("smith/openai", owned(&[])),
        ("smith/openai", owned(&[("api", "chat")])),
        ("smith/anthropic", owned(&[])),
        ("smith/google", owned(&[])),
    ] {
        let mut p = smith_plugins::builtin::vendor_component(name, None, limits)
            .unwrap()
            .instantiate(&settings)
            .unwrap();
        let exchange = p
            .encode(&request)
            .unwrap_or_else(|e| panic!("{name} {settings:?}: {}", e.message));
        let Exchange::Http(HttpExchange { body, .. }) = exchange else {
            panic!("{name}: not an HTTP exchange");
        };
        assert!(
            body.len() > bound - (128 << 10) && body.len() <= bound,
            "{name}: a body of {} bytes",
            body.len()
        );
    }
}

#[test]
fn a_provider_plugin_out_of_memory_is_plugin_memory_not_retried_and_names_no_manifest_for_a_built_in()
 {
    let (request, _) = request_near_the_bound();
    // The general default, too small for this request.
    let mut live = LiveProvider::new(setup(), Some(Vendor::OpenAiCompatible), Some("a"))
        .unwrap()
        .with_plugins(None, Limits::default());
    let mut error = live.encode(&request).unwrap_err();
    assert_eq!(
        error.kind,
        ProviderErrorKind::PluginMemory,
        "{}",
        error.message
    );
    assert!(
        error
            .message
            .starts_with("plugin smith/openai-compatible (call encode): the plugin reached its memory limit of 64 MiB"),
        "{}",
        error.message
    );
    assert!(error.message.contains("/compact"), "{}", error.message);
    assert!(!error.message.contains("plugin.kdl"), "{}", error.message);
    assert_eq!(live.recover(&mut error), None, "not retried");
    // With the provider limits the same request goes out.
    let mut live = LiveProvider::new(setup(), Some(Vendor::OpenAiCompatible), Some("a"))
        .unwrap()
        .with_plugins(
            None,
            smith_provider_host::provider_plugin_limits(Limits::default()),
        );
    live.encode(&request).unwrap();
}
