//! The JSON-RPC server in process: the first runtime's session, framing
//! and correlated errors, and nothing but records on the output.

use serde_json::{Value, json};
use smith_rpc::{Live, LiveProviders, Output, RpcServer, RuntimeOptions, SessionChoice};

use crate::support::Captured;

fn options(dir: &std::path::Path) -> RuntimeOptions {
    RuntimeOptions::new(
        // The native scripted demo, fresh for each runtime.
        LiveProviders(std::sync::Arc::new(|| {
            Ok(Live {
                provider: Box::new(smith_testkit::ScriptedProvider::demo()),
                transport: std::sync::Arc::new(smith_engine::provider::HostTransport),
                model: None,
            })
        })),
        dir.to_owned(),
        dir.join("sessions"),
    )
}

#[test]
fn requests_are_answered_in_order_with_their_ids() {
    let dir = tempfile::tempdir().unwrap();
    let captured = Captured::default();
    let server = RpcServer::new(
        options(dir.path()),
        &SessionChoice::New(Some("first".into())),
        Output::new(captured.clone()),
    )
    .unwrap();
    let input = concat!(
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"nope\"}\n",
        "not json\n",
        "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"session/list\"}\n",
        "{\"jsonrpc\":\"2.0\",\"method\":\"state\"}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"wait_settled\"}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"messages\",\"params\":{\"limit\":0}}\n",
    );
    server.serve(input.as_bytes()).unwrap();
    let records = captured.records();
    let ids: Vec<Value> = records.iter().map(|r| r["id"].clone()).collect();
    assert_eq!(
        ids,
        [
            json!(1),
            json!(2),
            Value::Null,
            json!("x"),
            json!(3),
            json!(4)
        ],
        "{records:?}"
    );
    assert_eq!(records[0]["result"]["session"]["name"], "first");
    assert_eq!(records[1]["error"]["code"], -32601);
    assert_eq!(records[2]["error"]["code"], -32700);
    assert_eq!(records[3]["result"]["sessions"][0]["name"], "first");
    assert_eq!(records[3]["result"]["sessions"][0]["current"], true);
    assert_eq!(
        records[4]["result"],
        json!({"settled": true}),
        "an idle runtime is settled at once"
    );
    assert_eq!(records[5]["error"]["code"], -32602);
}

#[test]
fn a_missing_session_fails_setup_with_a_diagnostic() {
    let dir = tempfile::tempdir().unwrap();
    let err = RpcServer::new(
        options(dir.path()),
        &SessionChoice::Open("nothing-here".into()),
        Output::new(Captured::default()),
    )
    .unwrap_err();
    assert!(
        err.message.contains("nothing-here") && err.message.contains("smith session list"),
        "{err}"
    );
}
