//! smith mcp answers the requests of a recorded exchange with a reference
//! MCP server (fixtures/mcp, revision 2025-11-25) in the same message
//! shapes, and records the effects of its tool calls in its session.

use serde_json::{Value, json};
use smith_engine::tools::ToolSet;
use smith_rpc::{McpOptions, McpServer, Output, SessionChoice};

use crate::support::{Captured, GatedInput};

const C2S: &str = include_str!("../fixtures/mcp/mcp_everything.c2s.jsonl");
const S2C: &str = include_str!("../fixtures/mcp/mcp_everything.s2c.jsonl");

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn reference(id: u64) -> Value {
    lines(S2C).into_iter().find(|v| v["id"] == id).unwrap()
}

/// Runs the recorded client messages (its `echo` call replaced by a call of
/// smith's `ls`, since smith has no echo tool) against a server.
fn serve() -> (tempfile::TempDir, Captured, String) {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("a.txt"), "alpha\n").unwrap();
    let mut input = String::new();
    for mut message in lines(C2S) {
        if message["method"] == "tools/call" {
            message["params"] = json!({"name": "ls", "arguments": {}});
        }
        input.push_str(&message.to_string());
        input.push('\n');
    }
    let captured = Captured::default();
    let server = McpServer::new(
        &McpOptions {
            cwd: work,
            store_root: dir.path().join("sessions"),
            session: SessionChoice::New(Some("mcp-test".into())),
            approval: smith_engine::approval::ApprovalCell::new(
                smith_engine::approval::Approval::Workspace,
            ),
        },
        Output::new(captured.clone()),
    )
    .unwrap();
    let session = server.session_id();
    server
        .serve(GatedInput::new(input, captured.clone(), vec![json!(4)]))
        .unwrap();
    (dir, captured, session)
}

#[test]
fn initialize_matches_the_reference_shape() {
    let (_dir, out, _) = serve();
    let ours = out.response(&json!(1));
    let theirs = reference(1);
    assert_eq!(ours["jsonrpc"], "2.0");
    assert_eq!(
        ours["result"]["protocolVersion"],
        theirs["result"]["protocolVersion"]
    );
    for key in ["name", "title", "version"] {
        assert!(
            ours["result"]["serverInfo"][key].is_string(),
            "serverInfo.{key}"
        );
        assert!(
            theirs["result"]["serverInfo"][key].is_string(),
            "reference serverInfo.{key}"
        );
    }
    assert_eq!(ours["result"]["serverInfo"]["name"], "smith");
    assert!(ours["result"]["instructions"].is_string());
    for capability in ["tools", "resources"] {
        assert!(
            ours["result"]["capabilities"][capability].is_object(),
            "{capability}"
        );
        assert!(
            theirs["result"]["capabilities"][capability].is_object(),
            "reference {capability}"
        );
    }
    assert_eq!(
        ours["result"]["capabilities"]["tools"]["listChanged"],
        false
    );
    // Nothing is declared that is not served.
    for capability in ["prompts", "logging", "completions", "tasks"] {
        assert!(
            ours["result"]["capabilities"].get(capability).is_none(),
            "{capability}"
        );
    }
}

#[test]
fn tools_list_matches_the_reference_shape_and_lists_the_built_in_tools() {
    let (_dir, out, _) = serve();
    let ours = out.response(&json!(2));
    let theirs = reference(2);
    let reference_tool = &theirs["result"]["tools"][0];
    let tools = ours["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    let builtin = ToolSet::builtin();
    let expected: Vec<&str> = builtin
        .names()
        .chain([
            "checkpoint_list",
            "checkpoint_diff",
            "checkpoint_undo",
            "checkpoint_redo",
        ])
        .collect();
    assert_eq!(names, expected);
    let (tools, checkpoint) = tools.split_at(builtin.names().count());
    // The checkpoint tools: object schemas and honest hints.
    for tool in checkpoint {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        let read_only = matches!(
            tool["name"].as_str(),
            Some("checkpoint_list" | "checkpoint_diff")
        );
        assert_eq!(tool["annotations"]["readOnlyHint"], read_only, "{tool}");
        assert_eq!(tool["annotations"]["destructiveHint"], !read_only, "{tool}");
    }
    for tool in tools {
        for key in ["name", "title", "description"] {
            assert!(
                tool[key].is_string() && reference_tool[key].is_string(),
                "{key}"
            );
        }
        assert_eq!(
            tool["inputSchema"]["type"],
            reference_tool["inputSchema"]["type"]
        );
        let def = builtin
            .get(tool["name"].as_str().unwrap())
            .unwrap()
            .definition();
        assert_eq!(
            tool["inputSchema"], def.parameters,
            "the schema is the tool's own"
        );
        for hint in [
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        ] {
            assert!(
                tool["annotations"][hint].is_boolean()
                    && reference_tool["annotations"][hint].is_boolean(),
                "{hint}"
            );
        }
    }
}

#[test]
fn resources_list_matches_the_reference_shape_and_lists_sessions() {
    let (_dir, out, session) = serve();
    let ours = out.response(&json!(3));
    let theirs = reference(3);
    let reference_resource = &theirs["result"]["resources"][0];
    let resources = ours["result"]["resources"].as_array().unwrap();
    assert_eq!(resources.len(), 1);
    for key in ["uri", "name", "mimeType", "description"] {
        assert!(
            resources[0][key].is_string() && reference_resource[key].is_string(),
            "{key}"
        );
    }
    assert_eq!(resources[0]["uri"], format!("smith://session/{session}"));
    assert_eq!(resources[0]["name"], "mcp-test");
}

#[test]
fn tools_call_matches_the_reference_shape_and_is_recorded() {
    let (dir, out, session) = serve();
    let ours = out.response(&json!(4));
    let theirs = reference(4);
    assert_eq!(
        ours["result"]["content"][0]["type"],
        theirs["result"]["content"][0]["type"]
    );
    assert_eq!(ours["result"]["content"][0]["text"], "a.txt");
    assert_eq!(ours["result"]["isError"], false);
    assert_eq!(ours["result"]["_meta"]["dev.smith/effect_id"], "fx-1");
    assert_eq!(ours["result"]["_meta"]["dev.smith/status"], "ok");
    // The intent and the completion are in the session.
    let store = smith_store::Store::open(dir.path().join("sessions")).unwrap();
    let file = store.open_file(&session).unwrap();
    let mut dump = Vec::new();
    smith_store::dump::dump(file.bytes(), store.limits(), "test", &mut dump).unwrap();
    let entries: Vec<Value> = dump
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    let kinds: Vec<&str> = entries.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert_eq!(kinds, ["effect_intent", "effect_completion"]);
    assert_eq!(entries[1]["content"]["input"], json!({}));
    assert_eq!(entries[1]["content"]["tool"], "ls");
    assert_eq!(entries[1]["content"]["parent"], "mcp:4");
    assert_eq!(entries[2]["content"]["outcome"], "ok");
}

#[test]
fn discover_probes_invalid_arguments_and_unknown_resources_answer_by_the_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let captured = Captured::default();
    let server = McpServer::new(
        &McpOptions {
            cwd: dir.path().to_owned(),
            store_root: dir.path().join("sessions"),
            session: SessionChoice::New(None),
            approval: smith_engine::approval::ApprovalCell::new(
                smith_engine::approval::Approval::Workspace,
            ),
        },
        Output::new(captured.clone()),
    )
    .unwrap();
    let input = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "read", "arguments": {"path": 5}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "smith://session/ffff"}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "prompts/list"}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}),
        json!({"jsonrpc": "2.0", "id": 6, "method": "ping"}),
    ]
    .iter()
    .map(|v| format!("{v}\n"))
    .collect::<String>();
    server.serve(input.as_bytes()).unwrap();
    // A probe without a revision learns what is served.
    let discover = captured.response(&json!(1));
    assert_eq!(discover["result"]["resultType"], "complete");
    assert_eq!(
        discover["result"]["supportedVersions"],
        json!(smith_rpc::mcp::PROTOCOL_VERSIONS)
    );
    assert_eq!(
        captured.response(&json!(2))["result"]["protocolVersion"],
        "2025-06-18"
    );
    let invalid = captured.response(&json!(3));
    assert_eq!(
        invalid["result"]["isError"], true,
        "invalid arguments are a tool error"
    );
    assert_eq!(invalid["result"]["_meta"]["dev.smith/status"], "invalid");
    assert_eq!(captured.response(&json!(4))["error"]["code"], -32002);
    assert_eq!(captured.response(&json!(5))["error"]["code"], -32601);
    assert_eq!(captured.response(&json!(6))["result"], json!({}));
    assert_eq!(
        captured.records().len(),
        6,
        "the unknown cancellation is ignored"
    );
}
