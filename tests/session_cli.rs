//! `smith session ...` end to end: every subcommand driven through the
//! built binary against a temporary `SMITH_HOME`, checking output and exit
//! codes, references by name and by id prefix, paths refused as references,
//! and dump → import reproducing the session file's exact bytes.

// Test code: helpers unwrap just like #[test] bodies.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn smith(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home)
        .env_remove("XDG_DATA_HOME")
        .current_dir(home)
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs a command that must succeed and returns its standard output.
fn ok(home: &Path, args: &[&str]) -> String {
    let o = smith(home, args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "smith {args:?} failed:\nstdout: {}\nstderr: {}",
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

/// Runs a command that must fail with exit code 1 and returns its stderr.
fn fails(home: &Path, args: &[&str]) -> String {
    let o = smith(home, args);
    assert_eq!(
        o.status.code(),
        Some(1),
        "smith {args:?} should fail:\nstdout: {}\nstderr: {}",
        stdout(&o),
        stderr(&o)
    );
    assert!(o.stdout.is_empty(), "nothing on stdout: {}", stdout(&o));
    stderr(&o)
}

/// Records a session through the offline demo; returns its id.
fn record(home: &Path, name: &str) -> String {
    std::fs::write(home.join("README.md"), "# hello project\n").unwrap();
    ok(
        home,
        &["eval", "--provider", "mock", "--name", name, "hello"],
    );
    let list = ok(home, &["session", "list", "--json"]);
    let v = list
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("session {name} listed: {list}"));
    v["id"].as_str().unwrap().to_string()
}

fn list_json(home: &Path) -> Vec<serde_json::Value> {
    ok(home, &["session", "list", "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn info(home: &Path, r: &str) -> serde_json::Value {
    serde_json::from_str(ok(home, &["session", "info", r, "--json"]).trim()).unwrap()
}

fn session_file(home: &Path, id: &str) -> PathBuf {
    home.join("data")
        .join("sessions")
        .join(format!("{id}.smith"))
}

#[test]
fn list_info_and_references_by_name_and_id_prefix() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let empty = ok(h, &["session", "list"]);
    assert!(empty.starts_with("no sessions in "), "{empty}");
    assert!(list_json(h).is_empty());

    let id = record(h, "demo");
    assert_eq!(id.len(), 32);
    let table = ok(h, &["session", "list"]);
    let mut lines = table.lines();
    assert!(lines.next().unwrap().starts_with("ID"), "{table}");
    let row = lines.next().unwrap();
    assert!(row.starts_with(&id) && row.contains("demo"), "{table}");
    assert!(lines.next().is_none());
    let listed = list_json(h);
    assert_eq!(listed.len(), 1);
    assert_eq!(
        listed[0]["bytes"].as_u64().unwrap(),
        std::fs::metadata(session_file(h, &id)).unwrap().len()
    );

    let by_name = info(h, "demo");
    assert_eq!(by_name["id"], id.as_str());
    assert_eq!(by_name["name"], "demo");
    assert!(by_name["entries"].as_u64().unwrap() >= 2, "{by_name}");
    assert_eq!(by_name["branches"], 1);
    assert_eq!(by_name["skipped_corrupt_frames"], 0);
    assert_eq!(by_name["torn_tail_bytes"], 0);
    assert_eq!(by_name["frames"], by_name["recovered_frames"]);
    // The same session by its full id, by a prefix, and in upper case.
    assert_eq!(info(h, &id), by_name);
    assert_eq!(info(h, &id[..6]), by_name);
    assert_eq!(info(h, &id[..6].to_uppercase()), by_name);
    let text = ok(h, &["session", "info", "demo"]);
    assert!(text.lines().any(|l| l.starts_with("entries ")), "{text}");
    assert!(text.contains(&id), "{text}");

    // References that name nothing, or are too short to be a prefix.
    let e = fails(h, &["session", "info", "nosuchname"]);
    assert!(
        e.contains("nosuchname") && e.contains("smith session list"),
        "{e}"
    );
    let e = fails(h, &["session", "info", &id[..3]]);
    assert!(e.contains(&id[..3]), "{e}");
}

#[test]
fn a_path_is_refused_as_a_reference_with_a_helpful_diagnostic() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let id = record(h, "demo");
    let path = session_file(h, &id);
    assert!(path.exists());
    for r in [
        path.to_str().unwrap().to_string(),
        format!("sessions/{id}.smith"),
        "./demo".to_string(),
        "..".to_string(),
        "a\\b".to_string(),
    ] {
        for sub in ["info", "dump", "delete", "fork", "repair"] {
            let e = fails(h, &["session", sub, &r]);
            assert!(
                e.contains("is not a session reference") && e.contains("never a path"),
                "{sub} {r}: {e}"
            );
            assert!(e.contains("smith session list"), "says what to do: {e}");
        }
    }
    assert!(path.exists(), "nothing was deleted");
}

#[test]
fn dump_then_import_reproduces_the_file_bytes() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let id = record(h, "demo");
    let original = std::fs::read(session_file(h, &id)).unwrap();

    let dumped = ok(h, &["session", "dump", "demo"]);
    let lines: Vec<serde_json::Value> = dumped
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "header");
    assert_eq!(lines[0]["id"], id.as_str());
    assert!(lines[1..].iter().all(|l| l["type"] == "entry"), "{dumped}");
    assert_eq!(
        lines.len() as u64 - 1,
        info(h, "demo")["entries"].as_u64().unwrap()
    );

    // --out writes the same text to a file.
    let out = h.join("demo.jsonl");
    assert_eq!(
        ok(
            h,
            &["session", "dump", &id[..8], "--out", out.to_str().unwrap()]
        ),
        ""
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), dumped);

    // Importing needs the id to be free: delete the original first.
    let e = fails(h, &["session", "import", out.to_str().unwrap()]);
    assert!(e.contains(&id), "{e}");
    assert_eq!(
        ok(h, &["session", "delete", "demo"]),
        format!("deleted session {id}\n")
    );
    assert!(!session_file(h, &id).exists());
    let msg = ok(
        h,
        &["session", "import", out.to_str().unwrap(), "--name", "back"],
    );
    assert!(
        msg.starts_with(&format!("imported session {id} (")),
        "{msg}"
    );
    assert_eq!(std::fs::read(session_file(h, &id)).unwrap(), original);
    assert_eq!(info(h, "back")["id"], id.as_str());

    // Standard input works too, and a broken dump is refused by line.
    ok(h, &["session", "delete", "back"]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", h)
        .args(["session", "import", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(dumped.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read(session_file(h, &id)).unwrap(), original);
    let bad = h.join("bad.jsonl");
    std::fs::write(&bad, "{\"type\":\"header\"}\nnot json\n").unwrap();
    let e = fails(h, &["session", "import", bad.to_str().unwrap()]);
    assert!(e.contains("line"), "names the line: {e}");
    let e = fails(
        h,
        &[
            "session",
            "import",
            h.join("missing.jsonl").to_str().unwrap(),
        ],
    );
    assert!(e.contains("missing.jsonl"), "{e}");
}

#[test]
fn fork_rename_delete() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let id = record(h, "demo");
    let entries = info(h, "demo")["selected_branch_len"].as_u64().unwrap();

    let msg = ok(h, &["session", "fork", "demo", "--name", "copy"]);
    assert!(
        msg.starts_with(&format!("forked {id} into "))
            && msg.ends_with(&format!("({entries} entries on the selected branch)\n")),
        "{msg}"
    );
    let fork = info(h, "copy");
    assert_ne!(fork["id"], id.as_str());
    assert_eq!(fork["origin"]["session"], id.as_str());
    assert_eq!(fork["selected_branch_len"].as_u64().unwrap(), entries);
    assert_eq!(list_json(h).len(), 2);
    // Names are unique.
    let e = fails(h, &["session", "fork", "demo", "--name", "copy"]);
    assert!(e.contains("copy"), "{e}");

    let msg = ok(h, &["session", "rename", "copy", "second"]);
    assert_eq!(
        msg,
        format!(
            "session {} is now named second\n",
            fork["id"].as_str().unwrap()
        )
    );
    fails(h, &["session", "info", "copy"]);
    assert_eq!(info(h, "second")["id"], fork["id"]);
    let e = fails(h, &["session", "rename", "second", "demo"]);
    assert!(e.contains("demo"), "name taken: {e}");
    let e = fails(h, &["session", "rename", "second", "bad/name"]);
    assert!(e.contains("bad/name"), "{e}");

    let fork_id = fork["id"].as_str().unwrap().to_string();
    assert_eq!(
        ok(h, &["session", "delete", &fork_id[..10]]),
        format!("deleted session {fork_id}\n")
    );
    assert!(!session_file(h, &fork_id).exists());
    fails(h, &["session", "delete", "second"]);
    assert_eq!(list_json(h).len(), 1);
}

#[test]
fn prune_and_repair() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let id = record(h, "demo");
    let path = session_file(h, &id);

    // Without options: only leftovers, with a note on stderr.
    let o = smith(h, &["session", "prune"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stdout(&o),
        "removed 0 session(s), 0 temporary file(s), 0 dangling name(s)\n"
    );
    assert!(stderr(&o).contains("--empty"), "{}", stderr(&o));
    // A recent, non-empty session survives both criteria.
    assert_eq!(
        ok(h, &["session", "prune", "--empty", "--older-than", "1"]),
        "removed 0 session(s), 0 temporary file(s), 0 dangling name(s)\n"
    );
    assert!(path.exists());
    // An empty session (header only) is pruned with --empty; its name goes too.
    let empty = "0123456789abcdef0123456789abcdef";
    let mut h2 = std::fs::read(&path).unwrap()[..48].to_vec();
    h2[12..28].copy_from_slice(&[
        0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd,
        0xef,
    ]);
    let crc = crc32c(&h2[..44]);
    h2[44..48].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(session_file(h, empty), &h2).unwrap();
    assert_eq!(info(h, empty)["entries"], 0);
    assert_eq!(
        ok(h, &["session", "prune", "--empty"]),
        format!(
            "removed session {empty}\nremoved 1 session(s), 0 temporary file(s), 0 dangling name(s)\n"
        )
    );
    assert!(!session_file(h, empty).exists());
    assert!(path.exists());

    // Repair of an intact file keeps every frame and the same bytes.
    let original = std::fs::read(&path).unwrap();
    let frames = info(h, "demo")["frames"].as_u64().unwrap();
    assert_eq!(
        ok(h, &["session", "repair", "demo"]),
        format!(
            "repaired demo: kept {frames} frame(s), dropped 0 corrupt frame(s), 0 torn-tail byte(s), 0 unattributable byte(s)\n"
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), original);
    // A torn tail: info reports it, dump says what it left out, repair drops it.
    let mut torn = original.clone();
    torn.extend_from_slice(&[40, 0, 0, 0, 1, 0]);
    std::fs::write(&path, &torn).unwrap();
    assert_eq!(info(h, "demo")["torn_tail_bytes"], 6);
    let o = smith(h, &["session", "dump", "demo"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        stderr(&o).contains("6 byte(s) of torn tail"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        ok(h, &["session", "repair", &id[..5]]),
        format!(
            "repaired {}: kept {frames} frame(s), dropped 0 corrupt frame(s), 6 torn-tail byte(s), 0 unattributable byte(s)\n",
            &id[..5]
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), original);
}

/// crc32c (Castagnoli), bitwise: the header checksum of a hand-made file.
fn crc32c(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn unknown_subcommands_and_missing_arguments_are_usage_errors() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    for args in [
        &["session", "frobnicate"][..],
        &["session", "info"][..],
        &["session", "rename", "only-one"][..],
    ] {
        let o = smith(h, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("Usage"), "{}", stderr(&o));
    }
}

#[test]
fn a_reader_that_goes_away_ends_dump_and_replay_quietly() {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    // 5,000 messages: far more output than a pipe holds.
    let mut dump = String::from(
        r#"{"type":"header","format":1,"id":"0123456789abcdef0123456789abcdef","created_ms":1}"#,
    );
    dump.push('\n');
    for id in 1..=5000u64 {
        let (kind, role) = if id % 2 == 1 {
            ("user_message", "user")
        } else {
            ("assistant_message", "assistant")
        };
        let content = if role == "user" {
            format!(r#"{{"role":"user","text":"question {id}"}}"#)
        } else {
            format!(
                r#"{{"role":"assistant","content":[{{"type":"text","text":"answer {id}"}}],"stop":"end"}}"#
            )
        };
        dump.push_str(&format!(
            r#"{{"type":"entry","id":{id},"parent":{},"timestamp_ms":{id},"kind":"{kind}","pairing":0,"content":{content}}}"#,
            id - 1
        ));
        dump.push('\n');
    }
    let file = home.join("many.jsonl");
    std::fs::write(&file, dump).unwrap();
    ok(
        home,
        &[
            "session",
            "import",
            file.to_str().unwrap(),
            "--name",
            "many",
        ],
    );
    for args in [
        &["session", "dump", "many"][..],
        &["replay", "many", "--instant", "--json"][..],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_smith"))
            .env("SMITH_HOME", home)
            .env_remove("XDG_DATA_HOME")
            .current_dir(home)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Read one line, then go away as `head -1` does.
        let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        reader.read_line(&mut first).unwrap();
        assert!(first.starts_with('{'), "{args:?}: {first}");
        drop(reader);
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(141), "{args:?}: {}", stderr(&out));
        assert!(out.stderr.is_empty(), "{args:?}: {}", stderr(&out));
    }
}

/// A session recorded by `smith eval` (a run of four tool calls, a run the
/// process left with an effect unanswered, a run that repairs it), plus
/// entries no writer of smith makes: numbers at the edges of what JSON and
/// CBOR hold, escapes, deep nesting, an entry kept as base64 and an unknown
/// frame. `dump.jsonl` and `replay.jsonl` are what `smith session dump` and
/// `smith replay --instant --json` wrote for it before they streamed; they
/// must still write exactly those bytes.
#[test]
fn dump_and_replay_write_the_same_bytes_as_before_they_streamed() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/session-dump");
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let session = fixtures.join("session.jsonl");
    ok(
        home,
        &[
            "session",
            "import",
            session.to_str().unwrap(),
            "--name",
            "fixture",
        ],
    );
    let dumped = ok(home, &["session", "dump", "fixture"]);
    let want = std::fs::read_to_string(fixtures.join("dump.jsonl")).unwrap();
    for (i, (got, want)) in dumped.lines().zip(want.lines()).enumerate() {
        assert_eq!(got, want, "dump line {}", i + 1);
    }
    assert_eq!(dumped, want);
    // The same bytes through --out.
    let out = home.join("out.jsonl");
    ok(
        home,
        &["session", "dump", "fixture", "--out", out.to_str().unwrap()],
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), want);

    let replayed = ok(home, &["replay", "fixture", "--instant", "--json"]);
    let want = std::fs::read_to_string(fixtures.join("replay.jsonl")).unwrap();
    for (i, (got, want)) in replayed.lines().zip(want.lines()).enumerate() {
        assert_eq!(got, want, "replay line {}", i + 1);
    }
    assert_eq!(replayed, want);
    // The whole recording built first (as --turns does) plays the same.
    let selected = ok(
        home,
        &["replay", "fixture", "--instant", "--json", "--turns", "1.."],
    );
    assert_eq!(selected, want);
    // A file that is not one intact linear history (here a torn tail) is
    // loaded, and replays the same.
    let id = want
        .lines()
        .last()
        .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .and_then(|v| v["session"]["id"].as_str().map(str::to_owned))
        .unwrap();
    let file = session_file(home, &id);
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.extend_from_slice(&[0x40, 0, 0]);
    std::fs::write(&file, bytes).unwrap();
    let loaded = ok(home, &["replay", "fixture", "--instant", "--json"]);
    assert_eq!(loaded, want);
}

/// Records session `name` from a mock script (`responses`, the model's
/// turns) and `prompt`, approving tools.
fn record_scripted(home: &Path, name: &str, responses: serde_json::Value, prompt: &str) {
    let script = home.join(format!("{name}.json"));
    std::fs::write(&script, responses.to_string()).unwrap();
    ok(
        home,
        &[
            "eval",
            "--yes",
            "--name",
            name,
            "--mock-script",
            &script.display().to_string(),
            prompt,
        ],
    );
}

#[test]
fn search_finds_text_in_every_session_with_smart_case() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    // alpha: a tool output of about 9 KB, stored compressed, ends with a
    // marker word.
    record_scripted(
        h,
        "alpha",
        serde_json::json!([
            [
                {"tool_call": {"id": "c1", "name": "bash",
                    "arguments": {"command": "seq 1 2000; echo zebra-$((40 + 2))"}}},
                {"stop": {"reason": "tool_use"}}
            ],
            [{"text": "done"}, {"stop": {"reason": "end"}}]
        ]),
        "please Fix the Flaky parser test",
    );
    assert!(
        info(h, "alpha")["compressed_entries"].as_u64().unwrap() >= 1,
        "the long output is stored compressed"
    );
    record_scripted(
        h,
        "beta",
        serde_json::json!([[{"text": "The flaky test is fixed now."}, {"stop": {"reason": "end"}}]]),
        "unrelated words",
    );

    // Without capitals, case is ignored: both sessions, newest first.
    let out = ok(h, &["session", "search", "flaky"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].starts_with("beta  #") && lines[0].contains("  assistant  "),
        "{out}"
    );
    assert!(lines[0].ends_with("The flaky test is fixed now."), "{out}");
    assert!(
        lines[1].starts_with("alpha  #") && lines[1].contains("  user  "),
        "{out}"
    );
    assert!(
        lines[1].ends_with("please Fix the Flaky parser test"),
        "{out}"
    );
    // A capital makes it exact.
    let out = ok(h, &["session", "search", "Flaky"]);
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.starts_with("alpha  #"), "{out}");
    // Inside a compressed tool output.
    let out = ok(h, &["session", "search", "zebra-42"]);
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(
        out.contains("  tool result  ") && out.contains("2000 zebra-42"),
        "{out}"
    );
    assert!(
        out.contains('…'),
        "a long text is cut around the match: {out}"
    );
    // One session only; JSON.
    let out = ok(
        h,
        &["session", "search", "flaky", "--session", "beta", "--json"],
    );
    let hits: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(hits.len(), 1, "{out}");
    assert_eq!(hits[0]["name"], "beta");
    assert_eq!(hits[0]["kind"], "assistant_message");
    let snippet = hits[0]["snippet"].as_str().unwrap();
    let m = &hits[0]["match"];
    let (a, b) = (
        m[0].as_u64().unwrap() as usize,
        m[1].as_u64().unwrap() as usize,
    );
    assert_eq!(&snippet[a..b], "flaky");
    // A limit shows fewer and says how many there were.
    let o = smith(h, &["session", "search", "flaky", "--limit", "1"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o).lines().count(), 1);
    assert!(
        stderr(&o).starts_with("2 hits in 2 of 2 sessions (the first 1 shown"),
        "{}",
        stderr(&o)
    );
    // No hit: exit 1 and nothing on stdout, as grep.
    let err = fails(h, &["session", "search", "no such words anywhere"]);
    assert!(err.starts_with("0 hits in 2 of 2 sessions"), "{err}");
    // The call is in the assistant message, once: its tool-call entry
    // repeats it and is not searched, nor is the effect record that
    // repeats the output.
    let out = ok(h, &["session", "search", "seq 1 2000"]);
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.contains("  assistant  "), "{out}");
    // The output is stored once, in the effect's completion: the result
    // refers to it (docs/session-format.md §4.1), and the hit above names
    // the result.
    let dump = ok(h, &["session", "dump", "alpha"]);
    assert_eq!(dump.matches("zebra-42").count(), 1, "{dump}");
    assert!(dump.contains("\"content_ref\":\"fx-"), "{dump}");
}

/// `session search` keeps its search index in the cache directory: the
/// first search indexes every session, the next rules out what cannot
/// hold the text and finds the same hits; a cache directory that cannot be
/// written gets one line of explanation and the same hits.
#[test]
fn search_keeps_an_index_in_the_cache_directory() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    record_scripted(
        h,
        "gamma",
        serde_json::json!([[{"text": "The walrus sleeps."}, {"stop": {"reason": "end"}}]]),
        "tell me about walruses",
    );
    let first = smith(h, &["session", "search", "walrus"]);
    assert_eq!(first.status.code(), Some(0));
    assert!(
        stderr(&first).contains("newly indexed"),
        "{}",
        stderr(&first)
    );
    let index = h.join("cache").join("search");
    let files: Vec<_> = std::fs::read_dir(&index).unwrap().collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let again = smith(h, &["session", "search", "walrus"]);
    assert_eq!(stdout(&again), stdout(&first));
    assert!(
        !stderr(&again).contains("newly indexed"),
        "{}",
        stderr(&again)
    );
    let err = fails(h, &["session", "search", "no such words anywhere"]);
    assert!(err.contains("ruled out by the search index"), "{err}");
    // A deleted session's index goes with the next search of every session.
    record_scripted(
        h,
        "delta",
        serde_json::json!([[{"text": "Another walrus."}, {"stop": {"reason": "end"}}]]),
        "more walruses",
    );
    assert_eq!(ok(h, &["session", "search", "walrus"]).lines().count(), 4);
    assert_eq!(std::fs::read_dir(&index).unwrap().count(), 2);
    ok(h, &["session", "delete", "delta"]);
    assert_eq!(
        stdout(&smith(h, &["session", "search", "walrus"])),
        stdout(&first)
    );
    assert_eq!(std::fs::read_dir(&index).unwrap().count(), 1);
    // The cache's search directory is a file: searched without the index.
    std::fs::remove_dir_all(&index).unwrap();
    std::fs::write(&index, b"in the way").unwrap();
    let blocked = smith(h, &["session", "search", "walrus"]);
    assert_eq!(blocked.status.code(), Some(0));
    assert_eq!(stdout(&blocked), stdout(&first));
    let note = stderr(&blocked);
    assert!(
        note.lines()
            .next()
            .unwrap()
            .starts_with("note: the search index directory ")
            && note.contains("reads every entry"),
        "{note}"
    );
}

/// `session export` writes the selected branch as Markdown a person reads:
/// prompt, thinking, the tool call with its arguments, its result in a
/// fence no backticks in the output can close, the answer and the run's
/// end; `--json` holds the same items in order; `--out` writes the file.
#[test]
fn export_writes_the_branch_as_markdown_and_json() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    record_scripted(
        h,
        "exported",
        serde_json::json!([
            [
                {"thinking": "Check the fence first."},
                {"text": "Printing it."},
                {"tool_call": {"id": "c1", "name": "bash",
                    "arguments": {"command": "printf 'a ```b``` c\\n'"}}},
                {"usage": {"input": 10, "output": 5}},
                {"stop": {"reason": "tool_use"}}
            ],
            [{"text": "It printed backticks."}, {"usage": {"input": 20, "output": 7}}, {"stop": {"reason": "end"}}]
        ]),
        "show me backticks",
    );
    let md = ok(h, &["session", "export", "exported"]);
    assert!(md.starts_with("# exported\n"), "{md}");
    let expected = [
        "## User\n\nshow me backticks\n",
        "## Assistant\n\n<details><summary>Thinking</summary>\n\nCheck the fence first.\n\n</details>\n\nPrinting it.\n\n**Tool call** `bash`\n\n````json\n{\n  \"command\": \"printf 'a ```b``` c\\\\n'\"\n}\n````\n",
        "**Result** of `bash` (ok):\n\n````\na ```b``` c\n[exit code 0]\n````\n",
        "## Assistant\n\nIt printed backticks.\n",
        "*Run ended (done): 30 input, 12 output tokens; cost unknown*",
    ];
    let mut at = 0;
    for part in expected {
        let found = md[at..]
            .find(part)
            .unwrap_or_else(|| panic!("{part:?} after byte {at} of:\n{md}"));
        at += found + part.len();
    }
    // The same document into a file.
    let file = h.join("out.md");
    ok(
        h,
        &[
            "session",
            "export",
            "exported",
            "--markdown",
            "--out",
            &file.display().to_string(),
        ],
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), md);
    // JSON: the items in order.
    let doc: serde_json::Value =
        serde_json::from_str(&ok(h, &["session", "export", "exported", "--json"])).unwrap();
    let types: Vec<&str> = doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "model",
            "user",
            "assistant",
            "tool_result",
            "assistant",
            "run_end"
        ],
        "{doc}"
    );
    assert_eq!(doc["items"][3]["content"], "a ```b``` c\n[exit code 0]");
    assert_eq!(doc["items"][5]["usage"]["input"], 30);
    // Both formats at once are a usage error.
    let o = smith(
        h,
        &["session", "export", "exported", "--markdown", "--json"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// `smith stats` sums what the sessions recorded by provider and model;
/// what no provider stated stays unknown.
#[test]
fn stats_sums_tokens_by_model_and_keeps_the_unknown_unknown() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let empty = ok(h, &["stats"]);
    assert!(empty.starts_with("0 session(s) in "), "{empty}");
    record_scripted(
        h,
        "one",
        serde_json::json!([[{"text": "a"}, {"usage": {"input": 100, "output": 10, "cache_read": 5}}, {"stop": {"reason": "end"}}]]),
        "first",
    );
    record_scripted(
        h,
        "two",
        serde_json::json!([[{"text": "b"}, {"usage": {"input": 1000, "output": 20}}, {"stop": {"reason": "end"}}]]),
        "second",
    );
    let v: serde_json::Value = serde_json::from_str(&ok(h, &["stats", "--json"])).unwrap();
    assert_eq!(v["sessions"], 2, "{v}");
    assert_eq!(v["empty_sessions"], 0, "{v}");
    let models = v["models"].as_array().unwrap();
    assert_eq!(models.len(), 1, "{v}");
    let m = &models[0];
    assert_eq!(
        (m["provider"].as_str(), m["model"].as_str()),
        (Some("mock"), Some("mock-1"))
    );
    assert_eq!(m["runs"], 2);
    assert_eq!(m["messages"], 2);
    assert_eq!(m["input"], serde_json::json!({"known": 1100, "unknown": 0}));
    assert_eq!(m["output"], serde_json::json!({"known": 30, "unknown": 0}));
    assert_eq!(
        m["cache_read"],
        serde_json::json!({"known": 5, "unknown": 1})
    );
    assert_eq!(
        m["cache_write"],
        serde_json::json!({"known": 0, "unknown": 2})
    );
    assert_eq!(
        m["cost"]["unknown"], 2,
        "the scripted provider has no price"
    );
    assert_eq!(v["total"]["input"]["known"], 1100);
    let table = ok(h, &["stats"]);
    let row = table
        .lines()
        .find(|l| l.starts_with("mock/mock-1"))
        .unwrap_or_else(|| panic!("{table}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cells,
        [
            "mock/mock-1",
            "2",
            "2",
            "1,100",
            "30",
            "5+?",
            "unknown",
            "unknown"
        ],
        "{table}"
    );
}

/// A session served by one smith (here `smith rpc`) is refused to a second
/// runtime in another process, with a diagnostic naming the process and
/// offering a fork; it is not deleted or pruned under it; once the first
/// ends, the session opens again.
#[test]
fn a_second_runtime_on_a_session_in_use_is_refused_and_offered_a_fork() {
    use std::io::{BufRead, Write};
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let mut server = Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home)
        .env_remove("XDG_DATA_HOME")
        .current_dir(home)
        .args(["rpc", "--provider", "mock", "--name", "busy"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    let mut lines = std::io::BufReader::new(server.stdout.take().unwrap()).lines();
    // Once it answers, its runtime serves the session.
    writeln!(
        stdin,
        r#"{{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {{}}}}"#
    )
    .unwrap();
    let answer = lines.next().unwrap().unwrap();
    assert!(answer.contains(r#""id":1"#), "{answer}");
    let pid = server.id();

    for args in [
        &[
            "eval",
            "--provider",
            "mock",
            "--session",
            "busy",
            "hi there",
        ][..],
        &["rpc", "--provider", "mock", "--session", "busy"][..],
    ] {
        let err = fails(home, args);
        assert!(
            err.contains(&format!(
                "session busy is in use by another smith (process {pid}, running on it for"
            )),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("fork it to go on in a copy (`smith session fork busy`, then open the fork), or end the other smith first"),
            "{args:?}: {err}"
        );
    }
    let err = fails(home, &["session", "delete", "busy"]);
    assert!(
        err.contains("session busy is in use by another smith"),
        "{err}"
    );
    // A fork is the way on, while it is in use.
    ok(home, &["session", "fork", "busy", "--name", "copy"]);
    ok(
        home,
        &[
            "eval",
            "--provider",
            "mock",
            "--session",
            "copy",
            "hi there",
        ],
    );
    // Pruning empty sessions keeps the one in use (it has no entries yet).
    ok(home, &["session", "prune", "--empty"]);
    assert!(
        list_json(home).iter().any(|s| s["name"] == "busy"),
        "{:?}",
        list_json(home)
    );

    drop(stdin);
    assert!(server.wait().unwrap().success());
    let out = ok(
        home,
        &[
            "eval",
            "--provider",
            "mock",
            "--session",
            "busy",
            "hi there",
        ],
    );
    assert!(out.contains("offline demo"), "{out}");
}

#[test]
fn an_eval_session_is_named_after_its_prompt() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    std::fs::write(home.join("README.md"), "# hello project\n").unwrap();
    let run = |prompt: &str| {
        let out = ok(home, &["eval", "--provider", "mock", "--json", prompt]);
        let result: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
        result["session"]["name"].as_str().unwrap().to_owned()
    };
    // The first words, lowercased, letters and digits joined with '-'.
    assert_eq!(
        run("Fix the lexer's off-by-one!"),
        "fix-the-lexer-s-off-by-one"
    );
    // The same prompt again gets the first free numbered name.
    assert_eq!(
        run("fix the lexer's OFF by one"),
        "fix-the-lexer-s-off-by-one-2"
    );
    // No usable words: eval-<time>.
    let unnamed = run("¿¡ …");
    let time = unnamed
        .strip_prefix("eval-")
        .unwrap_or_else(|| panic!("{unnamed}"));
    assert!(time.bytes().all(|b| b.is_ascii_digit()), "{unnamed}");
    // --name still wins.
    assert_eq!(
        run_named(home, "mine", "Fix the lexer's off-by-one!"),
        "mine"
    );
    let names: Vec<String> = list_json(home)
        .iter()
        .map(|v| v["name"].as_str().unwrap().to_owned())
        .collect();
    for name in [
        "fix-the-lexer-s-off-by-one",
        "fix-the-lexer-s-off-by-one-2",
        "mine",
        &unnamed,
    ] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    // The name resolves like any name.
    assert_eq!(
        info(home, "fix-the-lexer-s-off-by-one-2")["name"],
        "fix-the-lexer-s-off-by-one-2"
    );
}

fn run_named(home: &Path, name: &str, prompt: &str) -> String {
    let out = ok(
        home,
        &[
            "eval",
            "--provider",
            "mock",
            "--json",
            "--name",
            name,
            prompt,
        ],
    );
    let result: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    result["session"]["name"].as_str().unwrap().to_owned()
}

/// `smith` in `cwd` (a project folder) with `HOME` at `home`, so that
/// projects under it read as `~/...`, and a fixed listing clock.
fn smith_at(home: &Path, cwd: &Path, now_ms: u64, args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home)
        .env("HOME", home)
        .env("SMITH_NOW_MS", now_ms.to_string())
        .env_remove("XDG_DATA_HOME")
        .current_dir(cwd)
        .args(args)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "smith {args:?} failed:\nstdout: {}\nstderr: {}",
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

/// `session list` shows each session's project, a human date, its first
/// prompt, message count and cost, from the summary the runtime keeps;
/// only the current project's sessions unless `--all`; a session whose
/// summary is missing says "unknown", is listed everywhere, and gets its
/// summary back from its entries when it is resumed.
#[test]
fn list_shows_project_date_first_prompt_messages_and_cost() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let (p1, p2) = (h.join("p1"), h.join("p2"));
    std::fs::create_dir_all(&p1).unwrap();
    std::fs::create_dir_all(&p2).unwrap();
    let eval = |cwd: &Path, prompt: &str| {
        smith_at(h, cwd, 0, &["eval", "--provider", "mock", prompt]);
    };
    eval(&p1, "Fix the lexer's off-by-one\nand the parser too");
    eval(&p1, "second task");
    eval(&p2, "elsewhere");
    // Two days after the newest, by the listing's clock.
    let newest = smith_at(h, &p1, 0, &["session", "list", "--all", "--json"])
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["modified_ms"]
                .as_u64()
                .unwrap()
        })
        .max()
        .unwrap();
    let now = newest + 2 * 86_400_000;
    let table = smith_at(h, &p1, now, &["session", "list"]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "{table}");
    let head: Vec<&str> = lines[0].split("  ").filter(|c| !c.is_empty()).collect();
    assert_eq!(
        head.iter().map(|c| c.trim()).collect::<Vec<_>>(),
        [
            "ID",
            "NAME",
            "WHEN",
            "MSGS",
            "COST",
            "SIZE",
            "PROJECT",
            "FIRST PROMPT"
        ],
        "{table}"
    );
    assert!(
        lines[1][32..].trim_start().starts_with("second-task "),
        "{table}"
    );
    // The name is the prompt's first words, cut at 40 characters.
    assert!(
        lines[2][32..]
            .trim_start()
            .starts_with("fix-the-lexer-s-off-by-one-and-the "),
        "{table}"
    );
    for row in &lines[1..3] {
        assert!(row.contains("  2 days ago  "), "{table}");
        assert!(row.contains("  ~/p1  "), "{table}");
        // The scripted provider has no price.
        assert!(row.contains("  unknown  "), "{table}");
    }
    assert!(
        lines[2].ends_with("  Fix the lexer's off-by-one and the parser too"),
        "the first prompt on one line: {table}"
    );
    assert_eq!(
        lines[3],
        "1 session(s) of other projects not shown; `smith session list --all` shows them"
    );
    let all = smith_at(h, &p1, now, &["session", "list", "--all"]);
    assert_eq!(all.lines().count(), 4, "{all}");
    assert!(
        all.contains("  ~/p2  ") && all.contains("elsewhere"),
        "{all}"
    );
    // The other project sees its own session only.
    let other = smith_at(h, &p2, now, &["session", "list"]);
    assert!(
        other.contains("elsewhere") && !other.contains("second task"),
        "{other}"
    );
    // JSON carries the same fields.
    let json = smith_at(h, &p1, now, &["session", "list", "--json"]);
    let rows: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2, "{json}");
    let first = &rows[1];
    assert_eq!(first["project"], p1.display().to_string(), "{first}");
    assert_eq!(
        first["first_prompt"], "Fix the lexer's off-by-one\nand the parser too",
        "{first}"
    );
    assert_eq!(first["modified"], "2 days ago", "{first}");
    let messages = first["messages"].as_u64().unwrap();
    assert!(messages >= 2, "a prompt and an answer at least: {first}");
    assert_eq!(first["cost"], serde_json::Value::Null, "{first}");
    // Within the day: the time; the day before: yesterday.
    let created = first["modified_ms"].as_u64().unwrap();
    let today = smith_at(h, &p1, created + 1000, &["session", "list", "--json"]);
    assert!(today.contains("\"modified\":\"today "), "{today}");

    // A session without its summary (recorded before summaries): unknown,
    // listed in every project.
    let id = first["id"].as_str().unwrap();
    let sidecar = h.join("data/sessions").join(format!("{id}.summary"));
    assert!(sidecar.is_file(), "{}", sidecar.display());
    std::fs::remove_file(&sidecar).unwrap();
    let other = smith_at(h, &p2, now, &["session", "list"]);
    let row = other
        .lines()
        .find(|l| l.contains(" fix-the-lexer"))
        .unwrap_or_else(|| panic!("{other}"));
    assert!(
        row.contains("  unknown  ") && row.contains("  ?  "),
        "{other}"
    );
    assert!(row.ends_with("  -"), "{other}");
    // Resuming it writes the summary again from its entries.
    let name = first["name"].as_str().unwrap();
    smith_at(
        h,
        &p1,
        0,
        &["eval", "--provider", "mock", "--session", name, "again"],
    );
    let json = smith_at(h, &p1, now, &["session", "list", "--json"]);
    let back: serde_json::Value = json
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["id"] == id)
        .unwrap();
    assert_eq!(back["project"], p1.display().to_string(), "{back}");
    assert_eq!(
        back["first_prompt"], "Fix the lexer's off-by-one\nand the parser too",
        "{back}"
    );
    assert!(back["messages"].as_u64().unwrap() > messages, "{back}");
}

/// `smith mcp` with `input` on standard input (JSON-RPC lines), in `home`.
fn mcp_with(home: &Path, input: &str) -> Output {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_smith"))
        .env("SMITH_HOME", home)
        .env_remove("XDG_DATA_HOME")
        .current_dir(home)
        .args(["mcp", "--no-plugins"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// A `smith mcp` connection that called no tool leaves no session behind
/// (and says so); one that called a tool keeps its session.
#[test]
fn an_mcp_connection_without_calls_stores_no_session() {
    let home = tempfile::tempdir().unwrap();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
"#;
    let out = mcp_with(home.path(), init);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no tool was called; the empty session"),
        "{}",
        stderr(&out)
    );
    let listed = ok(home.path(), &["session", "list", "--all", "--json"]);
    assert_eq!(listed.trim(), "", "{listed}");
    std::fs::write(home.path().join("notes.txt"), "kept\n").unwrap();
    let call = format!(
        "{init}{}\n",
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read","arguments":{"path":"notes.txt"}}}"#
    );
    let out = mcp_with(home.path(), &call);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // (Standard input ends right after the call, which may cancel it:
    // recorded either way.)
    assert!(stdout(&out).contains(r#""id":3"#), "{}", stdout(&out));
    assert!(!stderr(&out).contains("was not kept"), "{}", stderr(&out));
    let listed = ok(home.path(), &["session", "list", "--all", "--json"]);
    assert_eq!(listed.lines().count(), 1, "{listed}");
    assert!(listed.contains("\"mcp-"), "{listed}");
}
