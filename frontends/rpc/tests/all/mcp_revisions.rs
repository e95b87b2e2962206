//! smith mcp speaks the stateless revision (2026-07-28: `server/discover`,
//! the revision and client capabilities in every request's `_meta`,
//! `resultType` and cache hints on results) and the handshake revisions
//! (`initialize`, negotiated per client) on the same stream.

use serde_json::{Value, json};
use smith_rpc::mcp::{
    HANDSHAKE_VERSIONS, LATEST_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION,
    PROTOCOL_VERSIONS, STATIC_TTL_MS, UNSUPPORTED_PROTOCOL_VERSION,
};
use smith_rpc::{McpOptions, McpServer, Output, SessionChoice};

use crate::support::{Captured, GatedInput};

fn server(dir: &std::path::Path) -> (McpServer, Captured) {
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("a.txt"), "alpha\nbeta\n").unwrap();
    let captured = Captured::default();
    let server = McpServer::new(
        &McpOptions {
            cwd: work,
            store_root: dir.join("sessions"),
            session: SessionChoice::New(Some("revisions".into())),
            approval: smith_engine::approval::ApprovalCell::new(
                smith_engine::approval::Approval::Workspace,
            ),
        },
        Output::new(captured.clone()),
    )
    .unwrap();
    (server, captured)
}

fn reopen(dir: &std::path::Path, session: &str) -> (McpServer, Captured) {
    let captured = Captured::default();
    let server = McpServer::new(
        &McpOptions {
            cwd: dir.join("work"),
            store_root: dir.join("sessions"),
            session: SessionChoice::Open(session.to_owned()),
            approval: smith_engine::approval::ApprovalCell::new(
                smith_engine::approval::Approval::Workspace,
            ),
        },
        Output::new(captured.clone()),
    )
    .unwrap();
    (server, captured)
}

fn input(records: &[Value]) -> String {
    records.iter().map(|v| format!("{v}\n")).collect()
}

/// A stateless request of `method` with the per-request `_meta`.
fn stateless(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        META_PROTOCOL_VERSION: "2026-07-28",
        META_CLIENT_CAPABILITIES: {},
        "io.modelcontextprotocol/clientInfo": {"name": "revision-test", "version": "1"},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[test]
fn a_stateless_client_discovers_lists_and_calls_without_a_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let (server, out) = server(dir.path());
    let session = server.session_id();
    let mut call = stateless(
        4,
        "tools/call",
        json!({"name": "read", "arguments": {"path": "a.txt"}}),
    );
    call["params"]["_meta"]["progressToken"] = json!("p-4");
    let records = [
        stateless(1, "server/discover", json!({})),
        stateless(2, "tools/list", json!({})),
        stateless(3, "resources/list", json!({})),
        call,
        // The same stream, an unsupported revision and a missing key.
        json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {"_meta": {META_PROTOCOL_VERSION: "2030-01-01", META_CLIENT_CAPABILITIES: {}}}}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}}),
        stateless(8, "initialize", json!({"protocolVersion": "2026-07-28"})),
    ];
    server
        .serve(GatedInput::new(
            input(&records),
            out.clone(),
            vec![json!(4)],
        ))
        .unwrap();

    let discover = out.response(&json!(1))["result"].clone();
    assert_eq!(discover["resultType"], "complete");
    assert_eq!(discover["supportedVersions"], json!(PROTOCOL_VERSIONS));
    assert_eq!(discover["supportedVersions"][0], LATEST_PROTOCOL_VERSION);
    assert_eq!(
        discover["capabilities"],
        json!({"tools": {"listChanged": false}, "resources": {"subscribe": false, "listChanged": false}})
    );
    assert_eq!(
        discover["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "smith"
    );
    assert!(
        discover["instructions"]
            .as_str()
            .unwrap()
            .contains("revisions")
    );
    assert_eq!(
        (discover["ttlMs"].clone(), discover["cacheScope"].clone()),
        (json!(STATIC_TTL_MS), json!("public"))
    );
    assert!(
        discover.get("protocolVersion").is_none(),
        "no handshake fields"
    );

    let tools = out.response(&json!(2))["result"].clone();
    assert_eq!(tools["resultType"], "complete");
    assert_eq!(tools["ttlMs"], STATIC_TTL_MS);
    // The seven built-in tools and the four checkpoint tools.
    assert_eq!(tools["tools"].as_array().unwrap().len(), 11);

    let resources = out.response(&json!(3))["result"].clone();
    assert_eq!(
        (resources["ttlMs"].clone(), resources["cacheScope"].clone()),
        (json!(0), json!("private"))
    );
    assert!(
        resources["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["uri"] == format!("smith://session/{session}"))
    );

    let called = out.response(&json!(4))["result"].clone();
    assert_eq!(called["resultType"], "complete");
    assert_eq!(called["isError"], false);
    assert!(
        called["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("beta")
    );
    assert!(
        called.get("ttlMs").is_none(),
        "a call result is not cacheable"
    );
    let progress: Vec<Value> = out
        .records()
        .into_iter()
        .filter(|r| r["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress[0]["params"]["progressToken"], "p-4");

    // A later server over the same session reads the call's records.
    let (server, out2) = reopen(dir.path(), &session);
    let read_request = stateless(
        5,
        "resources/read",
        json!({"uri": format!("smith://session/{session}")}),
    );
    server
        .serve(GatedInput::new(
            input(&[read_request]),
            out2.clone(),
            vec![],
        ))
        .unwrap();
    let read = out2.response(&json!(5))["result"].clone();
    assert_eq!(read["resultType"], "complete");
    assert_eq!(read["cacheScope"], "private");
    let dump = read["contents"][0]["text"].as_str().unwrap();
    assert!(
        dump.contains("effect_intent") && dump.contains("effect_completion"),
        "{dump}"
    );

    let unsupported = out.response(&json!(6))["error"].clone();
    assert_eq!(unsupported["code"], UNSUPPORTED_PROTOCOL_VERSION);
    assert_eq!(unsupported["data"]["supported"], json!(PROTOCOL_VERSIONS));
    assert_eq!(unsupported["data"]["requested"], "2030-01-01");
    let missing = out.response(&json!(7))["error"].clone();
    assert_eq!(missing["code"], -32602);
    assert!(
        missing["message"]
            .as_str()
            .unwrap()
            .contains(META_CLIENT_CAPABILITIES)
    );
    let handshake = out.response(&json!(8))["error"].clone();
    assert_eq!(handshake["data"]["kind"], "no_handshake");
}

#[test]
fn handshake_clients_get_their_revision_and_the_shapes_of_its_era() {
    for requested in HANDSHAKE_VERSIONS
        .iter()
        .copied()
        .chain(["2026-07-28", "1999-01-01"])
    {
        let dir = tempfile::tempdir().unwrap();
        let (server, out) = server(dir.path());
        let records = [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": requested, "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "ls", "arguments": {}}}),
            json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}),
        ];
        server
            .serve(GatedInput::new(
                input(&records),
                out.clone(),
                vec![json!(3)],
            ))
            .unwrap();
        let init = out.response(&json!(1))["result"].clone();
        let expected = if HANDSHAKE_VERSIONS.contains(&requested) {
            requested
        } else {
            "2025-11-25"
        };
        assert_eq!(init["protocolVersion"], expected, "asked for {requested}");
        assert_eq!(init["serverInfo"]["name"], "smith");
        assert!(init.get("resultType").is_none());
        let tools = out.response(&json!(2))["result"].clone();
        assert!(tools.get("resultType").is_none() && tools.get("ttlMs").is_none());
        let called = out.response(&json!(3))["result"].clone();
        assert_eq!(called["isError"], false);
        assert!(
            called["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("a.txt")
        );
        assert!(called.get("resultType").is_none());
        assert_eq!(out.response(&json!(4))["result"], json!({}));
    }
}
