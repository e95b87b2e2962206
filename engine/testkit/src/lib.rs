//! Test fixtures for the agent runtime: the scripted provider.
//!
//! [`ScriptedProvider`] plays a mock script (`docs/mock-provider.md`) one
//! response per request, through exactly the
//! [`Provider`](smith_engine::provider::Provider) contract a plugin
//! implements: `encode` answers with a local exchange whose chunks carry the
//! response's events (with their delays), `decode` turns each chunk back into
//! normalized events. With no script it runs a built-in demo that lists the
//! working directory, reads a file from it and answers.
//!
//! It is the very implementation the product's smith/mock plugin wraps
//! (`smith_contract::scripted`), here natively, so crates drive the runtime
//! in their tests without the plugin host; `plugins/tests` holds the plugin
//! to it, response for response, and the tests below hold it to the
//! engine's summary requests. Nothing outside `[dev-dependencies]` depends
//! on this crate.
#![deny(missing_docs)]

pub use smith_engine::provider::scripted::ScriptedProvider;

#[cfg(test)]
mod tests {
    use super::*;
    use smith_engine::provider::scripted::{MOCK_MODEL, parse_script};
    use smith_engine::provider::{Exchange, Message, Provider, Request, StopReason, StreamEvent};

    fn play(provider: &mut ScriptedProvider, request: &Request) -> Vec<StreamEvent> {
        let Exchange::Local { chunks } = provider.encode(request).unwrap() else {
            panic!("the scripted provider must answer with a local exchange");
        };
        chunks
            .iter()
            .flat_map(|c| provider.decode(&c.bytes))
            .collect()
    }

    fn request(messages: Vec<Message>) -> Request {
        Request {
            model: MOCK_MODEL.into(),
            system: None,
            messages,
            tools: Vec::new(),
            max_output_tokens: None,
        }
    }

    #[test]
    fn script_events_expand_to_normalized_events() {
        let script = parse_script(
            r#"[[{"text":"hi"},{"delay_ms":5},{"thinking":{"text":"t","signature":"0a"}},
                 {"tool_call":{"name":"ls","arguments":{"path":"."}}},
                 {"tool_call":{"id":"x","name":"read"}},
                 {"usage":{"input":1,"output":null}},{"stop":{"reason":"tool_use"}}],
                [{"error":{"kind":"rate_limit","message":"slow","retry_after_ms":9}}]]"#,
            "test",
        )
        .unwrap();
        let mut provider = ScriptedProvider::new(script);
        let req = request(vec![Message::user("go")]);
        let Exchange::Local { chunks } = provider.encode(&req).unwrap() else {
            panic!("local exchange expected");
        };
        assert_eq!(chunks[1].delay_ms, 5);
        let events: Vec<StreamEvent> = chunks
            .iter()
            .flat_map(|c| provider.decode(&c.bytes))
            .collect();
        assert_eq!(
            events[2],
            StreamEvent::ToolCallStart {
                id: "call_1_1".into(),
                name: "ls".into()
            }
        );
        assert_eq!(
            events[3],
            StreamEvent::ToolCallDelta {
                id: "call_1_1".into(),
                arguments: r#"{"path":"."}"#.into()
            }
        );
        assert_eq!(
            events[6],
            StreamEvent::ToolCallDelta {
                id: "x".into(),
                arguments: "{}".into()
            }
        );
        assert_eq!(
            events.last().unwrap(),
            &StreamEvent::Stop {
                reason: StopReason::ToolUse
            }
        );
        let second = play(&mut provider, &req);
        assert!(matches!(&second[0], StreamEvent::Error(e) if e.retry_after_ms == Some(9)));
        let err = provider.encode(&req).unwrap_err();
        assert!(
            err.message
                .contains("has 2 response(s) but the agent sent request 3")
        );
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
    fn summary_requests_take_the_scripted_summaries_apart_from_responses() {
        use smith_engine::agent::compact::summary_request;
        let script = parse_script(
            r#"{"responses": [[{"text": "answer"}, {"stop": {"reason": "end"}}]],
                "summaries": [[{"text": "the summary"}, {"stop": {"reason": "end"}}]]}"#,
            "test",
        )
        .unwrap();
        let mut provider = ScriptedProvider::new(script);
        let summary = summary_request(MOCK_MODEL, &[Message::user("a")], None, None);
        assert_eq!(text_of(&play(&mut provider, &summary)), "the summary");
        let ordinary = request(vec![Message::user("go")]);
        assert_eq!(text_of(&play(&mut provider, &ordinary)), "answer");
        assert_eq!(
            (provider.requests_seen(), provider.summaries_seen()),
            (1, 1)
        );
        let err = provider.encode(&summary).unwrap_err();
        assert!(
            err.message
                .contains("has 1 summary response(s) but the agent sent summary request 2"),
            "{}",
            err.message
        );
    }

    #[test]
    fn without_scripted_summaries_the_summary_is_generated_deterministically() {
        use smith_engine::agent::compact::summary_request;
        let history = vec![
            Message::User {
                text: "fix the parser".into(),
                media: Vec::new(),
            },
            Message::Assistant {
                content: vec![smith_engine::provider::ContentBlock::Text {
                    text: "done".into(),
                }],
                stop: StopReason::End,
            },
            Message::User {
                text: "and the tests".into(),
                media: Vec::new(),
            },
        ];
        let summary = summary_request(MOCK_MODEL, &history, Some("keep paths"), None);
        let mut provider = ScriptedProvider::new(Vec::new());
        let first = play(&mut provider, &summary);
        assert_eq!(
            text_of(&first),
            "Mock summary of 3 message(s). The user asked: \"fix the parser\", \"and the tests\". Focus: keep paths"
        );
        assert_eq!(
            first.last().unwrap(),
            &StreamEvent::Stop {
                reason: StopReason::End
            }
        );
        // The same request, the same answer; the demo answers the same way.
        assert_eq!(play(&mut provider, &summary), first);
        assert_eq!(play(&mut ScriptedProvider::demo(), &summary), first);
        assert_eq!(provider.requests_seen(), 0);
    }

    #[test]
    fn demo_lists_reads_and_answers() {
        let mut provider = ScriptedProvider::demo();
        let mut messages = vec![Message::User {
            text: "hello".into(),
            media: Vec::new(),
        }];
        let first = play(&mut provider, &request(messages.clone()));
        assert!(first.contains(&StreamEvent::ToolCallStart {
            id: "call_1_1".into(),
            name: "ls".into()
        }));
        messages.push(Message::ToolResult {
            call_id: "call_1_1".into(),
            name: "ls".into(),
            content: "src/\nCargo.toml\nREADME.md\n".into(),
            is_error: false,
            media: Vec::new(),
        });
        let second = play(&mut provider, &request(messages.clone()));
        assert!(second.contains(&StreamEvent::ToolCallDelta {
            id: "call_2_1".into(),
            arguments: r#"{"path":"README.md","limit":20}"#.into()
        }));
        messages.push(Message::ToolResult {
            call_id: "call_2_1".into(),
            name: "read".into(),
            content: "# smith\n".into(),
            is_error: false,
            media: Vec::new(),
        });
        let third = play(&mut provider, &request(messages));
        assert_eq!(
            third.last().unwrap(),
            &StreamEvent::Stop {
                reason: StopReason::End
            }
        );
        let text: String = third
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert!(text.contains("\"# smith\""), "{text}");
    }
}
