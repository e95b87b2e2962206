//! The built-in tools, driven through the public contract: bounds, errors,
//! mutation evidence, path policy and process control.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use smith_engine::tools::jobs::OnTimeout;
use smith_engine::tools::{
    CancelToken, Limits, Mutation, ReadTracker, ToolContext, ToolResult, ToolSet,
};
use tempfile::TempDir;

struct Env {
    _dir: TempDir,
    out: TempDir,
    cx: ToolContext,
    tools: ToolSet,
}

impl Env {
    fn new() -> Self {
        Self::with_limits(Limits::default())
    }

    fn with_limits(limits: Limits) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = tempfile::tempdir().expect("tempdir");
        let cx = ToolContext::new(dir.path())
            .expect("context")
            .with_limits(limits)
            .with_output_dir(out.path());
        Env {
            _dir: dir,
            out,
            cx,
            tools: {
                let mut tools = ToolSet::builtin();
                for tool in smith_engine::tools::jobs::job_tools() {
                    tools.insert(tool);
                }
                tools
            },
        }
    }

    fn root(&self) -> PathBuf {
        self.cx.cwd().to_path_buf()
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    fn put(&self, rel: &str, content: impl AsRef<[u8]>) {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent).expect("mkdir");
        }
        fs::write(p, content).expect("write fixture");
    }

    fn get(&self, rel: &str) -> String {
        fs::read_to_string(self.path(rel)).expect("read back")
    }

    fn call(&self, name: &str, args: Value) -> ToolResult {
        self.tools.call(name, &args, &self.cx)
    }

    fn call_in(&self, cx: &ToolContext, name: &str, args: Value) -> ToolResult {
        self.tools.call(name, &args, cx)
    }

    fn ok(&self, name: &str, args: Value) -> ToolResult {
        let r = self.call(name, args);
        assert!(!r.is_error, "{name} failed: {}", r.content);
        r
    }

    fn err(&self, name: &str, args: Value, kind: &str) -> ToolResult {
        let r = self.call(name, args);
        assert!(r.is_error, "{name} unexpectedly succeeded: {}", r.content);
        assert_eq!(r.error_kind(), Some(kind), "{}", r.content);
        r
    }
}

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

// ---------------------------------------------------------------- read

#[test]
fn read_windows_continue_with_an_offset_hint() {
    let env = Env::new();
    env.put("big.txt", numbered(3000));
    let r = env.ok("read", json!({"path": "big.txt"}));
    assert!(r.content.starts_with("line 1\nline 2\n"));
    assert!(
        r.content.contains(
            "\nline 2000\n\n[Showing lines 1-2000 of 3000. Use offset=2001 to continue.]"
        )
    );
    assert!(!r.content.contains("line 2001"));
    assert_eq!(r.details["end_line"], 2000);
    assert_eq!(r.details["truncated"], true);
    assert_eq!(r.mutation, Mutation::NotApplied);

    let r = env.ok("read", json!({"path": "big.txt", "offset": 2001}));
    assert!(r.content.starts_with("line 2001\n"));
    assert!(
        r.content.ends_with("line 3000"),
        "{}",
        &r.content[r.content.len() - 40..]
    );
    assert_eq!(r.details["truncated"], false);

    let r = env.ok("read", json!({"path": "big.txt", "offset": 10, "limit": 3}));
    assert_eq!(
        r.content,
        "line 10\nline 11\nline 12\n\n[Showing lines 10-12 of 3000. Use offset=13 to continue.]"
    );
}

#[test]
fn read_stops_at_the_byte_bound() {
    let env = Env::new();
    let line = "x".repeat(99);
    env.put("wide.txt", format!("{line}\n").repeat(1000));
    let r = env.ok("read", json!({"path": "wide.txt"}));
    // 512 lines of 99 chars plus separators fit in 50 KiB (51,200 bytes).
    assert_eq!(r.details["end_line"], 512);
    assert!(
        r.content
            .ends_with("[Showing lines 1-512 of 1000 (50 KiB limit). Use offset=513 to continue.]")
    );
    let body = r.content.split("\n\n[").next().unwrap_or_default();
    assert!(body.len() <= 50 * 1024);
}

#[test]
fn read_caps_long_lines_with_a_marker() {
    let env = Env::new();
    env.put("long.txt", format!("short\n{}\n", "y".repeat(5000)));
    let r = env.ok("read", json!({"path": "long.txt"}));
    let expected = format!(
        "short\n{}… [line truncated: 3000 more characters]\n[1 line(s) longer than 2000 characters were truncated.]",
        "y".repeat(2000)
    );
    assert_eq!(r.content, expected);
}

#[test]
fn read_holds_only_the_shown_part_of_a_huge_line() {
    let env = Env::new();
    // One 64 MiB line, then a short one.
    let mut body = "é".repeat(32 * 1024 * 1024).into_bytes();
    body.extend_from_slice(b"\nend\n");
    env.put("one-line.txt", &body);
    let (r, stats) = smith_alloc::count(|| env.call("read", json!({"path": "one-line.txt"})));
    assert!(!r.is_error, "{}", r.content);
    let expected = format!(
        "{}… [line truncated: {} more characters]\nend\n[1 line(s) longer than 2000 characters were truncated.]",
        "é".repeat(2000),
        32 * 1024 * 1024 - 2000
    );
    assert_eq!(r.content, expected);
    assert_eq!(r.details["total_lines"], 2);
    assert_eq!(r.details["bytes"], body.len());
    // The line was never held whole: the read buffer, the kept part and
    // the output are all that was live at once.
    assert!(
        stats.peak_live_bytes < 256 * 1024,
        "peak {} bytes for a {} byte line",
        stats.peak_live_bytes,
        body.len()
    );
}

#[test]
fn read_reports_binary_without_dumping_it() {
    let env = Env::new();
    let mut bytes = b"PK\x03\x04".to_vec();
    bytes.extend_from_slice(&[0u8, 1, 2, 3, 0xff, 0xfe]);
    bytes.extend_from_slice(b"SECRETPAYLOAD");
    env.put("archive.zip", &bytes);
    let r = env.err("read", json!({"path": "archive.zip"}), "binary");
    assert!(
        r.content
            .contains("archive.zip is a binary file (23 bytes)"),
        "{}",
        r.content
    );
    assert!(r.content.contains("NUL byte at offset 4"));
    assert!(!r.content.contains("SECRETPAYLOAD"));
}

#[test]
fn read_missing_file_directory_and_offset_errors() {
    let env = Env::new();
    let r = env.err("read", json!({"path": "nope/missing.rs"}), "not-found");
    assert!(r.content.contains("nope/missing.rs"), "{}", r.content);
    assert!(r.content.contains("Next: "));
    fs::create_dir(env.path("d")).expect("mkdir");
    let r = env.err("read", json!({"path": "d"}), "wrong-file-type");
    assert!(r.content.contains("use ls"));
    env.put("small.txt", "a\nb\n");
    let r = env.err(
        "read",
        json!({"path": "small.txt", "offset": 5}),
        "offset-out-of-range",
    );
    assert!(
        r.content
            .contains("offset 5 is past the end of small.txt, which has 2 lines")
    );
    env.put("empty.txt", "");
    assert_eq!(
        env.ok("read", json!({"path": "empty.txt"})).content,
        "[empty file]"
    );
}

// ---------------------------------------------------------------- write

#[test]
fn write_creates_parents_and_reports_applied() {
    let env = Env::new();
    let r = env.ok(
        "write",
        json!({"path": "a/b/c.txt", "content": "hello\nworld\n"}),
    );
    assert_eq!(env.get("a/b/c.txt"), "hello\nworld\n");
    assert_eq!(r.mutation, Mutation::Applied);
    assert_eq!(
        r.content,
        "Created a/b/c.txt (12 bytes, 2 lines). Created directories: a, a/b."
    );
    assert_eq!(r.details["created"], true);
}

#[cfg(unix)]
#[test]
fn write_replaces_atomically_and_keeps_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    env.put("run.sh", "#!/bin/sh\necho old\n");
    fs::set_permissions(env.path("run.sh"), fs::Permissions::from_mode(0o751)).expect("chmod");
    let inode_before = {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(env.path("run.sh")).expect("meta").ino()
    };
    env.ok("read", json!({"path": "run.sh"}));
    let r = env.ok(
        "write",
        json!({"path": "run.sh", "content": "#!/bin/sh\necho new\n"}),
    );
    assert_eq!(r.content, "Replaced run.sh (19 bytes, 2 lines).");
    assert_eq!(env.get("run.sh"), "#!/bin/sh\necho new\n");
    let meta = fs::metadata(env.path("run.sh")).expect("meta");
    assert_eq!(meta.permissions().mode() & 0o7777, 0o751);
    {
        use std::os::unix::fs::MetadataExt;
        // A rename puts a new inode in place: the old content was never
        // truncated in place.
        assert_ne!(meta.ino(), inode_before);
    }
    let leftovers: Vec<String> = fs::read_dir(env.root())
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(leftovers, ["run.sh"]);
    // A second write needs no new read: the tracker knows what it wrote.
    env.ok("write", json!({"path": "run.sh", "content": "x"}));
}

#[test]
fn write_refuses_unread_and_stale_files() {
    let env = Env::new();
    env.put("notes.md", "original\n");
    let r = env.err(
        "write",
        json!({"path": "notes.md", "content": "new"}),
        "not-read",
    );
    assert!(
        r.content.contains("notes.md exists but has not been read"),
        "{}",
        r.content
    );
    assert_eq!(r.mutation, Mutation::NotApplied);
    assert_eq!(env.get("notes.md"), "original\n");

    env.ok("read", json!({"path": "notes.md"}));
    env.put("notes.md", "changed by someone else\n");
    let r = env.err(
        "write",
        json!({"path": "notes.md", "content": "new"}),
        "stale",
    );
    assert!(r.content.contains("read notes.md again"), "{}", r.content);
    assert_eq!(env.get("notes.md"), "changed by someone else\n");

    // Without the read requirement an unread file may be replaced.
    let cx = env
        .cx
        .clone()
        .with_read_tracker(Arc::new(ReadTracker::new()))
        .with_require_read(false);
    let r = env.call_in(&cx, "write", json!({"path": "notes.md", "content": "new"}));
    assert!(!r.is_error, "{}", r.content);
    assert_eq!(env.get("notes.md"), "new");
}

#[test]
fn write_with_a_missing_field_creates_nothing() {
    let env = Env::new();
    let r = env.err("write", json!({"path": "x/new.txt"}), "invalid-arguments");
    assert!(
        r.content
            .contains("argument `content` must be a string, but received nothing (missing)"),
        "{}",
        r.content
    );
    assert_eq!(r.mutation, Mutation::NotApplied);
    assert!(!env.path("x").exists());
    let r = env.err(
        "write",
        json!({"path": "y.txt", "content": 42}),
        "invalid-arguments",
    );
    assert!(r.content.contains("received number 42"), "{}", r.content);
    assert!(!env.path("y.txt").exists());
    let r = env.err(
        "write",
        json!({"path": "z.txt", "content": "", "mode": "0644"}),
        "invalid-arguments",
    );
    assert!(r.content.contains("argument `mode`"), "{}", r.content);
    assert!(!env.path("z.txt").exists());
}

// ---------------------------------------------------------------- edit

#[test]
fn edit_replaces_once_and_returns_a_compact_diff() {
    let env = Env::new();
    env.put(
        "src/lib.rs",
        "fn a() {}\n\nfn b() {\n    1\n}\n\nfn c() {}\n",
    );
    env.ok("read", json!({"path": "src/lib.rs"}));
    let r = env.ok(
        "edit",
        json!({"path": "src/lib.rs", "old_text": "    1\n", "new_text": "    2\n    3\n"}),
    );
    assert_eq!(
        env.get("src/lib.rs"),
        "fn a() {}\n\nfn b() {\n    2\n    3\n}\n\nfn c() {}\n"
    );
    assert_eq!(r.mutation, Mutation::Applied);
    assert_eq!(
        r.content,
        "Edited src/lib.rs: replaced 1 occurrence (line 4).\n\
         --- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,7 +1,8 @@\n fn a() {}\n \n fn b() {\n-    1\n+    2\n+    3\n }\n \n fn c() {}"
    );
    // Consecutive edits need no re-read.
    env.ok(
        "edit",
        json!({"path": "src/lib.rs", "old_text": "fn c", "new_text": "fn d"}),
    );
}

#[test]
fn edit_no_match_and_ambiguous_match_name_count_and_lines() {
    let env = Env::new();
    env.put("m.txt", "x = 1\nfoo\ny\nfoo\nz\nfoo\n");
    env.ok("read", json!({"path": "m.txt"}));
    let r = env.err(
        "edit",
        json!({"path": "m.txt", "old_text": "bar", "new_text": "baz"}),
        "no-match",
    );
    assert!(
        r.content
            .contains("old_text was not found in m.txt (0 occurrences)"),
        "{}",
        r.content
    );
    assert_eq!(r.mutation, Mutation::NotApplied);
    let r = env.err(
        "edit",
        json!({"path": "m.txt", "old_text": "foo", "new_text": "baz"}),
        "ambiguous-match",
    );
    assert!(
        r.content
            .contains("old_text occurs 3 times in m.txt (lines 2, 4, 6)"),
        "{}",
        r.content
    );
    assert_eq!(r.details["lines"], json!([2, 4, 6]));
    assert_eq!(env.get("m.txt"), "x = 1\nfoo\ny\nfoo\nz\nfoo\n");
    let r = env.err(
        "edit",
        json!({"path": "m.txt", "old_text": "    x = 1", "new_text": "x = 2"}),
        "no-match",
    );
    assert!(
        r.content
            .contains("ignoring surrounding whitespace, at line(s) 1"),
        "{}",
        r.content
    );
    env.err(
        "edit",
        json!({"path": "m.txt", "old_text": "y", "new_text": "y"}),
        "no-change",
    );
}

#[test]
fn edit_replace_all_changes_every_occurrence() {
    let env = Env::new();
    env.put("m.txt", "foo\ny\nfoo\n");
    env.ok("read", json!({"path": "m.txt"}));
    let r = env.ok(
        "edit",
        json!({"path": "m.txt", "old_text": "foo", "new_text": "bar", "replace_all": true}),
    );
    assert_eq!(env.get("m.txt"), "bar\ny\nbar\n");
    assert_eq!(r.details["replacements"], 2);
    assert_eq!(
        r.content,
        "Edited m.txt: replaced 2 occurrences (lines 1, 3).\n--- a/m.txt\n+++ b/m.txt\n@@ -1,3 +1,3 @@\n-foo\n+bar\n y\n-foo\n+bar"
    );
}

#[test]
fn edit_refuses_stale_and_unread_input() {
    let env = Env::new();
    env.put("s.txt", "alpha\n");
    let r = env.err(
        "edit",
        json!({"path": "s.txt", "old_text": "alpha", "new_text": "beta"}),
        "not-read",
    );
    assert!(r.content.contains("read s.txt first"), "{}", r.content);
    env.ok("read", json!({"path": "s.txt"}));
    env.put("s.txt", "alpha\ngamma\n");
    let r = env.err(
        "edit",
        json!({"path": "s.txt", "old_text": "alpha", "new_text": "beta"}),
        "stale",
    );
    assert!(
        r.content.contains("s.txt changed since it was last read"),
        "{}",
        r.content
    );
    assert!(r.content.contains("read s.txt again"));
    assert_eq!(env.get("s.txt"), "alpha\ngamma\n");
    env.ok("read", json!({"path": "s.txt"}));
    env.ok(
        "edit",
        json!({"path": "s.txt", "old_text": "alpha", "new_text": "beta"}),
    );
    assert_eq!(env.get("s.txt"), "beta\ngamma\n");
}

#[test]
fn edit_matches_lf_text_in_crlf_files_and_keeps_crlf() {
    let env = Env::new();
    env.put("w.txt", "one\r\ntwo\r\nthree\r\n");
    env.ok("read", json!({"path": "w.txt"}));
    env.ok(
        "edit",
        json!({"path": "w.txt", "old_text": "one\ntwo", "new_text": "1\n2"}),
    );
    assert_eq!(env.get("w.txt"), "1\r\n2\r\nthree\r\n");
}

#[cfg(unix)]
#[test]
fn edit_keeps_permissions_and_rejects_missing_files() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    env.put("x.sh", "echo a\n");
    fs::set_permissions(env.path("x.sh"), fs::Permissions::from_mode(0o700)).expect("chmod");
    env.ok("read", json!({"path": "x.sh"}));
    env.ok(
        "edit",
        json!({"path": "x.sh", "old_text": "a", "new_text": "b"}),
    );
    let mode = fs::metadata(env.path("x.sh"))
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    let r = env.err(
        "edit",
        json!({"path": "absent.txt", "old_text": "a", "new_text": "b"}),
        "not-found",
    );
    assert!(
        r.content.contains("use write to create absent.txt"),
        "{}",
        r.content
    );
}

// ---------------------------------------------------------------- bash

#[cfg(unix)]
mod bash {
    use super::*;

    #[test]
    fn exit_status_and_merged_output() {
        let env = Env::new();
        let r = env.ok("bash", json!({"command": "echo out; echo err >&2"}));
        assert_eq!(r.content, "out\nerr\n[exit code 0]");
        assert_eq!(r.mutation, Mutation::Applied);
        assert_eq!(r.details["exit_code"], 0);
        let r = env.err(
            "bash",
            json!({"command": "echo failing; exit 3"}),
            "command-failed",
        );
        assert_eq!(r.content, "failing\n[exit code 3]");
        assert_eq!(r.details["exit_code"], 3);
        assert_eq!(r.mutation, Mutation::Applied);
        let r = env.ok("bash", json!({"command": "true"}));
        assert_eq!(r.content, "(no output)\n[exit code 0]");
    }

    #[test]
    fn runs_in_the_context_cwd_not_the_process_cwd() {
        let env = Env::new();
        fs::create_dir(env.path("sub")).expect("mkdir");
        let r = env.ok("bash", json!({"command": "pwd"}));
        assert_eq!(
            r.content,
            format!("{}\n[exit code 0]", env.root().display())
        );
        let r = env.ok("bash", json!({"command": "pwd", "cwd": "sub"}));
        assert_eq!(
            r.content,
            format!("{}\n[exit code 0]", env.path("sub").display())
        );
        let r = env.err(
            "bash",
            json!({"command": "pwd", "cwd": ".."}),
            "outside-roots",
        );
        assert_eq!(r.mutation, Mutation::NotApplied);
        env.err(
            "bash",
            json!({"command": "pwd", "cwd": "missing"}),
            "not-found",
        );
    }

    #[test]
    fn stdin_is_closed() {
        let env = Env::new();
        let started = Instant::now();
        let r = env.ok("bash", json!({"command": "cat; echo after"}));
        assert_eq!(r.content, "after\n[exit code 0]");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn timeout_kills_the_command_and_reports_unknown() {
        let env = Env::with_limits(Limits {
            bash_on_timeout: OnTimeout::Kill,
            ..Limits::default()
        });
        let started = Instant::now();
        let r = env.err(
            "bash",
            json!({"command": "echo begun; sleep 30", "timeout": 0.5}),
            "timed-out",
        );
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(r.mutation, Mutation::Unknown);
        assert!(
            r.content
                .starts_with("begun\n[timed out after 0.5 s; the process group was terminated"),
            "{}",
            r.content
        );
        assert_eq!(r.details["timed_out"], true);
        env.err(
            "bash",
            json!({"command": "true", "timeout": 0}),
            "invalid-arguments",
        );
        env.err(
            "bash",
            json!({"command": "true", "timeout": 99999}),
            "invalid-arguments",
        );
    }

    /// Processes of group `pgid` that are alive (zombies waiting for a
    /// reaper do not count).
    pub(super) fn live_group_members(pgid: i64) -> Vec<i64> {
        let mut out = Vec::new();
        for entry in fs::read_dir("/proc").expect("/proc") {
            let Ok(entry) = entry else { continue };
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i64>() else {
                continue;
            };
            let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            // Fields after the parenthesised command: state ppid pgrp ...
            let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
                continue;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            if fields.len() > 2
                && fields[2] == pgid.to_string()
                && fields[0] != "Z"
                && fields[0] != "X"
            {
                out.push(pid);
            }
        }
        out
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn cancellation_kills_the_whole_process_group() {
        let env = Env::new();
        let cancel = CancelToken::new();
        let cx = env.cx.clone().with_cancel(cancel.clone());
        let pid_file = env.path("pids");
        let command = format!(
            "sleep 100 & echo $! > {p}; sleep 100 & echo $! >> {p}; wait",
            p = pid_file.display()
        );
        let canceller = {
            let cancel = cancel.clone();
            let pid_file = pid_file.clone();
            std::thread::spawn(move || {
                // Cancel once both background processes exist.
                let deadline = Instant::now() + Duration::from_secs(10);
                while Instant::now() < deadline {
                    let n = fs::read_to_string(&pid_file)
                        .map(|s| s.lines().count())
                        .unwrap_or(0);
                    if n == 2 {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                cancel.cancel();
            })
        };
        let started = Instant::now();
        let r = env.call_in(&cx, "bash", json!({"command": command}));
        canceller.join().expect("canceller");
        assert!(r.is_error);
        assert_eq!(r.error_kind(), Some("cancelled"));
        assert_eq!(r.mutation, Mutation::Unknown);
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "{:?}",
            started.elapsed()
        );
        // SIGTERM was enough: the group was seen gone before the grace
        // period ran out.
        assert!(!r.content.contains("SIGKILL"), "{}", r.content);
        let pgid = r.details["pid"].as_i64().expect("pid");
        assert_eq!(live_group_members(pgid), Vec::<i64>::new());
        for pid in fs::read_to_string(&pid_file).expect("pids").lines() {
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat
                .rsplit_once(')')
                .map(|(_, r)| r.trim_start().chars().next());
            assert!(
                matches!(state, None | Some(Some('Z' | 'X'))),
                "background sleep {pid} survived: {stat}"
            );
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_group_ignoring_sigterm_is_killed_after_the_grace_period() {
        let env = Env::with_limits(Limits {
            bash_kill_grace: Duration::from_millis(300),
            bash_on_timeout: OnTimeout::Kill,
            ..Limits::default()
        });
        let r = env.err(
            "bash",
            json!({"command": "trap '' TERM; sleep 100 & sleep 100", "timeout": 0.3}),
            "timed-out",
        );
        assert!(
            r.content.ends_with(
                "[timed out after 0.3 s; the process group was terminated with SIGKILL]"
            ),
            "{}",
            r.content
        );
        let pgid = r.details["pid"].as_i64().expect("pid");
        assert_eq!(live_group_members(pgid), Vec::<i64>::new());
    }

    #[test]
    fn cancelled_before_start_runs_nothing() {
        let env = Env::new();
        let cancel = CancelToken::new();
        cancel.cancel();
        let cx = env.cx.clone().with_cancel(cancel);
        let r = env.call_in(&cx, "bash", json!({"command": "touch made"}));
        assert_eq!(r.error_kind(), Some("cancelled"));
        assert_eq!(r.mutation, Mutation::NotApplied);
        assert!(!env.path("made").exists());
    }

    #[test]
    fn large_output_keeps_head_and_tail_and_saves_the_full_output() {
        let env = Env::new();
        let r = env.ok("bash", json!({"command": "seq 1 100000"}));
        let expected: String = (1..=100000).map(|i| format!("{i}\n")).collect();
        assert_eq!(r.details["output_bytes"], expected.len());
        assert_eq!(r.details["truncated"], true);
        assert!(r.content.starts_with("1\n2\n3\n"));
        assert!(r.content.contains("bytes omitted ...]\n"));
        assert!(r.content.contains(
            "99999\n100000\n[output truncated: 588895 bytes in total; full output saved to "
        ));
        assert!(r.content.len() < 52 * 1024, "{}", r.content.len());
        let full = r.details["full_output_path"].as_str().expect("path");
        assert!(Path::new(full).starts_with(env.out.path()));
        assert_eq!(fs::read_to_string(full).expect("full output"), expected);
        // Small outputs leave no file behind.
        env.ok("bash", json!({"command": "echo small"}));
        let files = fs::read_dir(env.out.path()).expect("ls").count();
        assert_eq!(files, 1);
    }

    #[test]
    fn output_written_just_before_exit_is_not_lost() {
        let env = Env::with_limits(Limits {
            bash_output_bytes: 10 * 1024 * 1024,
            ..Limits::default()
        });
        for _ in 0..5 {
            let r = env.ok(
                "bash",
                json!({"command": "head -c 3000000 /dev/zero | tr '\\0' x; printf END; exit 0"}),
            );
            assert_eq!(r.details["output_bytes"], 3_000_003);
            assert!(r.content.ends_with("xxxEND\n[exit code 0]"));
        }
    }

    #[test]
    fn a_background_process_holding_the_pipe_does_not_hang_the_call() {
        let env = Env::with_limits(Limits {
            bash_drain_after_exit: Duration::from_millis(300),
            ..Limits::default()
        });
        let started = Instant::now();
        let r = env.ok("bash", json!({"command": "sleep 3 & echo started"}));
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert!(r.content.starts_with("started\n[the shell exited but a background process kept its output open; stopped reading after 300 ms]\n[exit code 0]"), "{}", r.content);
        assert_eq!(r.details["pipe_held_open"], true);
        let pgid = r.details["pid"].as_i64().expect("pid");
        // SAFETY: test cleanup: terminate the leftover background sleep.
        unsafe { libc::kill(-(pgid as libc::pid_t), libc::SIGKILL) };
    }

    #[test]
    fn output_streams_to_the_sink() {
        let env = Env::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink_seen = seen.clone();
        let cx = env.cx.clone().with_output_sink(Arc::new(move |b: &[u8]| {
            sink_seen.lock().expect("lock").extend_from_slice(b);
        }));
        env.call_in(&cx, "bash", json!({"command": "echo one; echo two"}));
        assert_eq!(&*seen.lock().expect("lock"), b"one\ntwo\n");
    }
}

// ---------------------------------------------------------------- find / grep / ls

fn tree(env: &Env) {
    env.put(".gitignore", "target/\n*.log\n");
    env.put(".ignore", "secret.rs\n");
    env.put("src/main.rs", "fn main() {\n    println!(\"Hello\");\n}\n");
    env.put(
        "src/lib.rs",
        "pub fn hello() -> &'static str {\n    \"hello\"\n}\n",
    );
    env.put("src/secret.rs", "hello secret\n");
    env.put("src/a/deep.rs", "// hello deep\n");
    env.put("target/debug/out.rs", "hello build output\n");
    env.put("debug.log", "hello log\n");
    env.put(".github/ci.yml", "hello: ci\n");
    env.put(".git/config", "hello git\n");
    env.put("README.md", "Hello readme\n");
    env.put("blob.bin", b"hello\0binary");
}

#[test]
fn find_respects_ignore_files_and_sorts() {
    let env = Env::new();
    tree(&env);
    let r = env.ok("find", json!({"pattern": "*.rs"}));
    assert_eq!(r.content, "src/a/deep.rs\nsrc/lib.rs\nsrc/main.rs");
    let r = env.ok("find", json!({"pattern": "*"}));
    assert_eq!(
        r.content,
        ".github/\n.github/ci.yml\n.gitignore\n.ignore\nREADME.md\nblob.bin\nsrc/\nsrc/a/\nsrc/a/deep.rs\nsrc/lib.rs\nsrc/main.rs"
    );
    let r = env.ok("find", json!({"pattern": "src/*.rs"}));
    assert_eq!(r.content, "src/lib.rs\nsrc/main.rs");
    let r = env.ok("find", json!({"pattern": "*.rs", "path": "src/a"}));
    assert_eq!(r.content, "src/a/deep.rs");
    let r = env.ok("find", json!({"pattern": "*.zig"}));
    assert_eq!(r.content, "No paths under . match `*.zig`.");
}

#[test]
fn find_limit_says_how_many_more() {
    let env = Env::new();
    for i in 0..12 {
        env.put(&format!("f{i:02}.txt"), "");
    }
    let r = env.ok("find", json!({"pattern": "*.txt", "limit": 5}));
    assert_eq!(
        r.content,
        "f00.txt\nf01.txt\nf02.txt\nf03.txt\nf04.txt\n[7 more results not shown; narrow the pattern or path, or raise limit]"
    );
    env.err("find", json!({"pattern": "a[", "path": "."}), "bad-pattern");
    env.err(
        "find",
        json!({"pattern": "*", "path": "f00.txt"}),
        "wrong-file-type",
    );
}

#[test]
fn grep_finds_sorted_matches_respecting_ignores_and_binary() {
    let env = Env::new();
    tree(&env);
    let r = env.ok("grep", json!({"pattern": "hello"}));
    assert_eq!(
        r.content,
        ".github/ci.yml:1:hello: ci\nsrc/a/deep.rs:1:// hello deep\nsrc/lib.rs:1:pub fn hello() -> &'static str {\nsrc/lib.rs:2:    \"hello\""
    );
    assert_eq!(r.details["matches"], 4);
    assert_eq!(r.details["files"], 3);
    let r = env.ok(
        "grep",
        json!({"pattern": "hello", "ignore_case": true, "glob": "*.md"}),
    );
    assert_eq!(r.content, "README.md:1:Hello readme");
    let r = env.ok(
        "grep",
        json!({"pattern": "hello", "path": "src/main.rs", "ignore_case": true}),
    );
    assert_eq!(r.content, "src/main.rs:2:    println!(\"Hello\");");
}

#[test]
fn grep_literal_context_limit_and_errors() {
    let env = Env::new();
    env.put("a.txt", "a.b\naxb\n1\n2\n3\n4\n5\n6\na.b\n");
    let r = env.ok("grep", json!({"pattern": "a.b"}));
    assert_eq!(r.details["matches"], 3);
    let r = env.ok("grep", json!({"pattern": "a.b", "literal": true}));
    assert_eq!(r.content, "a.txt:1:a.b\na.txt:9:a.b");
    let r = env.ok(
        "grep",
        json!({"pattern": "a.b", "literal": true, "context": 1}),
    );
    assert_eq!(
        r.content,
        "a.txt:1:a.b\na.txt-2-axb\n--\na.txt-8-6\na.txt:9:a.b"
    );
    let r = env.ok("grep", json!({"pattern": "a.b", "limit": 2}));
    assert_eq!(
        r.content,
        "a.txt:1:a.b\na.txt:2:axb\n[1 more matches not shown; narrow the pattern, path or glob, or raise limit]"
    );
    // The last match the limit allows keeps its after-context.
    let r = env.ok(
        "grep",
        json!({"pattern": "a.b", "literal": true, "context": 1, "limit": 1}),
    );
    assert_eq!(
        r.content,
        "a.txt:1:a.b\na.txt-2-axb\n[1 more matches not shown; narrow the pattern, path or glob, or raise limit]"
    );
    // Groups from different files are separated too.
    env.put("b.txt", "x\na.b\n");
    let r = env.ok(
        "grep",
        json!({"pattern": "a.b", "literal": true, "context": 1}),
    );
    assert_eq!(
        r.content,
        "a.txt:1:a.b\na.txt-2-axb\n--\na.txt-8-6\na.txt:9:a.b\n--\nb.txt-1-x\nb.txt:2:a.b"
    );
    fs::remove_file(env.path("b.txt")).expect("rm");
    let r = env.err("grep", json!({"pattern": "fn("}), "bad-pattern");
    assert!(r.content.contains("literal: true"), "{}", r.content);
    let r = env.ok("grep", json!({"pattern": "zzz"}));
    assert_eq!(r.content, "No matches for `zzz` in ..");
    env.err(
        "grep",
        json!({"pattern": "a", "context": 99}),
        "invalid-arguments",
    );
}

#[test]
fn grep_caps_long_lines() {
    let env = Env::new();
    env.put("min.js", format!("var a='{}';\n", "q".repeat(2000)));
    let r = env.ok("grep", json!({"pattern": "var"}));
    assert!(r.content.starts_with("min.js:1:var a='qqq"));
    assert!(
        r.content
            .ends_with("… [line truncated: 1518 more characters]"),
        "{}",
        r.content
    );
}

#[test]
fn ls_lists_sorted_entries_respecting_ignores() {
    let env = Env::new();
    tree(&env);
    #[cfg(unix)]
    std::os::unix::fs::symlink("README.md", env.path("link")).expect("symlink");
    let r = env.ok("ls", json!({}));
    let mut expected = ".git/\n.github/\n.gitignore\n.ignore\nREADME.md\nblob.bin\n".to_owned();
    if cfg!(unix) {
        expected.push_str("link@\n");
    }
    expected.push_str("src/");
    assert_eq!(r.content, expected);
    let r = env.ok("ls", json!({"path": "src"}));
    assert_eq!(r.content, "a/\nlib.rs\nmain.rs");
    let r = env.ok("ls", json!({"limit": 2}));
    let more = if cfg!(unix) { 6 } else { 5 };
    assert!(
        r.content
            .starts_with(&format!(".git/\n.github/\n[{more} more entries not shown")),
        "{}",
        r.content
    );
    env.err("ls", json!({"path": "README.md"}), "wrong-file-type");
    env.err("ls", json!({"path": "nothing"}), "not-found");
    fs::create_dir(env.path("empty")).expect("mkdir");
    assert_eq!(
        env.ok("ls", json!({"path": "empty"})).content,
        "(empty directory)"
    );
}

// ---------------------------------------------------------------- paths

#[test]
fn paths_resolve_against_the_context_cwd_not_the_process_cwd() {
    let env = Env::new();
    // The test process runs in the crate directory, which has a Cargo.toml.
    assert!(Path::new("Cargo.toml").exists());
    env.put("Cargo.toml", "context copy\n");
    assert_eq!(
        env.ok("read", json!({"path": "Cargo.toml"})).content,
        "context copy"
    );
    env.ok("write", json!({"path": "made.txt", "content": "x"}));
    assert!(env.path("made.txt").exists());
    assert!(!Path::new("made.txt").exists());
}

#[test]
fn paths_outside_the_roots_are_refused() {
    let env = Env::new();
    let outside = tempfile::tempdir().expect("tempdir");
    fs::write(outside.path().join("victim.txt"), "keep\n").expect("write");
    let victim = outside.path().join("victim.txt");
    let r = env.err(
        "read",
        json!({"path": victim.display().to_string()}),
        "outside-roots",
    );
    assert!(
        r.content.contains("outside the allowed roots"),
        "{}",
        r.content
    );
    env.err("read", json!({"path": "../../etc/passwd"}), "outside-roots");
    env.err(
        "write",
        json!({"path": "/tmp/smith-escape.txt", "content": "x"}),
        "outside-roots",
    );
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outside.path(), env.path("door")).expect("symlink");
        env.err("read", json!({"path": "door/victim.txt"}), "outside-roots");
        let r = env.err(
            "write",
            json!({"path": "door/new/file.txt", "content": "x"}),
            "outside-roots",
        );
        assert_eq!(r.mutation, Mutation::NotApplied);
        assert!(!outside.path().join("new").exists());
        env.err("ls", json!({"path": "door"}), "outside-roots");
        env.err(
            "grep",
            json!({"pattern": "keep", "path": "door"}),
            "outside-roots",
        );
        std::os::unix::fs::symlink(&victim, env.path("alias.txt")).expect("symlink");
        env.err(
            "edit",
            json!({"path": "alias.txt", "old_text": "keep", "new_text": "gone"}),
            "outside-roots",
        );
        // A symlink inside the root to a file inside the root is fine.
        env.put("real.txt", "inside\n");
        std::os::unix::fs::symlink(env.path("real.txt"), env.path("alias2.txt")).expect("symlink");
        assert_eq!(
            env.ok("read", json!({"path": "alias2.txt"})).content,
            "inside"
        );
    }
    assert_eq!(fs::read_to_string(&victim).expect("victim"), "keep\n");
    // An extra root opens the outside directory.
    let cx = env
        .cx
        .clone()
        .with_roots([env.root(), outside.path().to_path_buf()])
        .expect("roots");
    let r = env.call_in(&cx, "read", json!({"path": victim.display().to_string()}));
    assert_eq!(r.content, "keep");
}

#[test]
fn read_only_tools_can_share_a_context_across_threads() {
    let env = Env::new();
    tree(&env);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| env.call("grep", json!({"pattern": "hello"})).details["matches"].clone())
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().expect("thread"), 4);
        }
    });
}

#[test]
fn failed_writes_report_not_applied_and_leave_nothing() {
    let env = Env::new();
    env.put("plain.txt", "file, not a directory\n");
    let r = env.call(
        "write",
        json!({"path": "plain.txt/child.txt", "content": "x"}),
    );
    assert!(r.is_error, "{}", r.content);
    assert_eq!(r.mutation, Mutation::NotApplied);
    assert!(r.content.contains("plain.txt/child.txt"), "{}", r.content);
    assert_eq!(env.get("plain.txt"), "file, not a directory\n");
    let r = env.err(
        "write",
        json!({"path": ".", "content": "x"}),
        "wrong-file-type",
    );
    assert_eq!(r.mutation, Mutation::NotApplied);
}

#[test]
fn cancelled_read_only_tools_do_nothing() {
    let env = Env::new();
    tree(&env);
    let cancel = CancelToken::new();
    cancel.cancel();
    let cx = env.cx.clone().with_cancel(cancel);
    for (name, args) in [
        ("read", json!({"path": "README.md"})),
        ("find", json!({"pattern": "*"})),
        ("grep", json!({"pattern": "hello"})),
        ("ls", json!({})),
        ("write", json!({"path": "new.txt", "content": "x"})),
    ] {
        let r = env.call_in(&cx, name, args);
        assert_eq!(r.error_kind(), Some("cancelled"), "{name}: {}", r.content);
        assert_eq!(r.mutation, Mutation::NotApplied);
    }
    assert!(!env.path("new.txt").exists());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Following the continuation hints window by window returns every
    /// line exactly once, in order.
    #[test]
    fn read_windows_cover_the_file_exactly(
        lines in proptest::collection::vec("[a-z é]{0,12}", 0..120),
        limit in 1usize..40,
        trailing_newline in proptest::bool::ANY,
    ) {
        let env = Env::new();
        let mut text = lines.join("\n");
        if trailing_newline && !lines.is_empty() {
            text.push('\n');
        }
        env.put("f.txt", &text);
        let mut seen: Vec<String> = Vec::new();
        let mut offset = 1usize;
        loop {
            let r = env.call("read", json!({"path": "f.txt", "offset": offset, "limit": limit}));
            proptest::prop_assert!(!r.is_error, "{}", r.content);
            let end = r.details["end_line"].as_u64().unwrap_or_default() as usize;
            if r.details["total_lines"] == 0 {
                break;
            }
            let body = match r.content.split_once("\n\n[Showing lines ") {
                Some((b, hint)) => {
                    let expected = format!("Use offset={} to continue.]", end + 1);
                    proptest::prop_assert!(hint.ends_with(&expected), "{}", hint);
                    b.to_owned()
                }
                None => r.content.clone(),
            };
            seen.extend(body.split('\n').map(str::to_owned));
            if r.details["truncated"] == false {
                break;
            }
            offset = end + 1;
        }
        let expected: Vec<String> = text.lines().map(str::to_owned).collect();
        proptest::prop_assert_eq!(seen, expected);
    }
}

#[cfg(unix)]
#[test]
fn fifos_are_refused_instead_of_blocking() {
    let env = Env::new();
    let fifo = env.path("pipe");
    let c = std::ffi::CString::new(fifo.display().to_string()).expect("cstring");
    // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    for (name, args) in [
        ("read", json!({"path": "pipe"})),
        (
            "edit",
            json!({"path": "pipe", "old_text": "a", "new_text": "b"}),
        ),
        ("write", json!({"path": "pipe", "content": "x"})),
        ("grep", json!({"pattern": "a", "path": "pipe"})),
    ] {
        let r = env.err(name, args, "wrong-file-type");
        assert!(
            r.content.contains("pipe is not a regular file"),
            "{name}: {}",
            r.content
        );
    }
    // Walks skip it too.
    assert_eq!(
        env.ok("grep", json!({"pattern": "a"})).content,
        "No matches for `a` in .."
    );
}

#[test]
fn output_files_of_ended_runs_are_swept_and_live_ones_kept() {
    use smith_engine::tools::bash::{KEEP_OUTPUTS, sweep_outputs};
    let dir = tempfile::tempdir().expect("tempdir");
    let put = |name: &str, body: &str| {
        let p = dir.path().join(name);
        fs::write(&p, body).expect("write");
        p
    };
    // A process id no process has (above the largest the kernel hands out).
    let dead = 4_194_304 + 17;
    let killed = put(&format!("bash-{dead}-0.log"), "");
    let recent = put(&format!("bash-{dead}-1.log"), "full output");
    let old = put(&format!("bash-{dead}-2.log"), "full output");
    let day_ago = std::time::SystemTime::now() - KEEP_OUTPUTS - Duration::from_secs(60);
    fs::File::options()
        .write(true)
        .open(&old)
        .expect("open")
        .set_modified(day_ago)
        .expect("set mtime");
    let mine = put(&format!("bash-{}-0.log", std::process::id()), "");
    let other = put("notes.txt", "");
    assert_eq!(sweep_outputs(dir.path(), KEEP_OUTPUTS), 2);
    assert!(!killed.exists() && !old.exists());
    assert!(recent.exists() && mine.exists() && other.exists());
    assert_eq!(sweep_outputs(dir.path(), KEEP_OUTPUTS), 0);
}

#[test]
fn sandbox_temp_dirs_of_killed_runs_are_swept_and_live_ones_kept() {
    use smith_engine::tools::sandbox::{TEMP_PREFIX, sweep_temp_dirs};
    let parent = tempfile::tempdir().expect("tempdir");
    let dir = |name: &str| {
        let p = parent.path().join(name);
        fs::create_dir_all(p.join("work")).expect("mkdir");
        fs::write(p.join("work/file"), "left behind").expect("write");
        p
    };
    // A process id no process has (above the largest the kernel hands out).
    let dead = 4_194_304 + 17;
    let killed = dir(&format!("{TEMP_PREFIX}{dead}-a1b2c3"));
    let mine = dir(&format!("{TEMP_PREFIX}{}-d4e5f6", std::process::id()));
    // Named without a process id (an older smith's): not known to be dead.
    let unnamed = dir(&format!("{TEMP_PREFIX}x7y8z9"));
    let other = dir("notes");
    // A link with a dead process's name is not followed or removed.
    let target = dir("target");
    let link = parent.path().join(format!("{TEMP_PREFIX}{dead}-link"));
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    assert_eq!(sweep_temp_dirs(parent.path()), 1);
    assert!(!killed.exists());
    assert!(mine.exists() && unnamed.exists() && other.exists());
    assert!(link.symlink_metadata().is_ok() && target.join("work/file").exists());
    assert_eq!(sweep_temp_dirs(parent.path()), 0);
}

// ---------------------------------------------------------------- jobs

#[cfg(target_os = "linux")]
mod jobs {
    use super::bash::live_group_members;
    use super::*;

    /// Waits up to 10 s for group `pgid` to have no live member.
    fn gone(pgid: i64) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if live_group_members(pgid).is_empty() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    #[test]
    fn a_background_job_returns_at_once_and_its_output_is_read_incrementally() {
        let env = Env::new();
        let started = Instant::now();
        let r = env.ok(
            "bash",
            json!({"command": "echo first; sleep 1; echo second; echo third", "background": true}),
        );
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(r.mutation, Mutation::Applied);
        assert_eq!(r.details["job"], "job-1");
        assert_eq!(r.details["background"], true);
        let pgid = r.details["pid"].as_i64().expect("pid");
        assert!(
            r.content.starts_with(&format!(
                "Started job-1 in the background (process group {pgid}).\nfirst\n[job-1 is running ("
            )),
            "{}",
            r.content
        );
        assert!(
            r.content.contains("bash_output {\"job\": \"job-1\"}"),
            "{}",
            r.content
        );

        // Only what is new since the start's read, once the job ended.
        let r = env.ok("bash_output", json!({"job": "job-1", "wait": 10}));
        assert_eq!(r.mutation, Mutation::NotApplied);
        assert!(
            r.content
                .starts_with("second\nthird\n[job-1 exited with code 0 after "),
            "{}",
            r.content
        );
        assert_eq!(r.details["state"], "exited");
        assert_eq!(r.details["exit_code"], 0);
        assert_eq!(r.details["from"], 6);
        assert_eq!(r.details["next"], 19);
        // Nothing new, then the whole output again from a cursor.
        let r = env.ok("bash_output", json!({"job": "job-1"}));
        assert!(
            r.content.starts_with("(no new output)\n[job-1 exited"),
            "{}",
            r.content
        );
        let r = env.ok("bash_output", json!({"job": "1", "since": 0}));
        assert!(
            r.content.starts_with("first\nsecond\nthird\n"),
            "{}",
            r.content
        );
        assert!(gone(pgid));
        let jobs = env.cx.jobs().list();
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].state, "exited");
        assert_eq!(jobs[0].output_bytes, 19);
        let file = jobs[0].output_path.as_deref().expect("output file");
        assert_eq!(
            fs::read_to_string(file).expect("file"),
            "first\nsecond\nthird\n"
        );
    }

    #[test]
    fn a_command_that_outruns_its_timeout_moves_to_the_background_with_its_output() {
        let env = Env::new();
        let r = env.ok(
            "bash",
            json!({"command": "echo begun; sleep 1.5; echo later; exit 3", "timeout": 0.5}),
        );
        assert_eq!(r.details["timed_out"], true);
        assert_eq!(r.details["job"], "job-1");
        assert!(
            r.content.starts_with(
                "begun\n[still running after the 0.5 s timeout: it continues in the background as job-1 (process group "
            ),
            "{}",
            r.content
        );
        assert!(
            r.content.contains("bash_kill {\"job\": \"job-1\"}"),
            "{}",
            r.content
        );
        let r = env.ok("bash_output", json!({"job": "job-1", "wait": 10}));
        assert!(
            r.content
                .starts_with("later\n[job-1 exited with code 3 after "),
            "{}",
            r.content
        );
        let r = env.ok("bash_output", json!({"job": "job-1", "since": 0}));
        assert!(r.content.starts_with("begun\nlater\n"), "{}", r.content);
    }

    #[test]
    fn bash_kill_ends_the_whole_group() {
        let env = Env::new();
        let pids = env.path("pids");
        let r = env.ok(
            "bash",
            json!({
                "command": format!("sleep 100 & echo $! > {}; echo up; sleep 100", pids.display()),
                "background": true,
            }),
        );
        let pgid = r.details["pid"].as_i64().expect("pid");
        let r = env.ok("bash_kill", json!({"job": "job-1"}));
        assert_eq!(r.mutation, Mutation::Applied);
        assert_eq!(r.details["state"], "killed");
        assert_eq!(r.details["signal"], libc_sigterm());
        assert!(
            r.content.contains(&format!(
                "[sent SIGTERM to process group {pgid}; job-1 was killed by signal 15 after "
            )),
            "{}",
            r.content
        );
        assert!(gone(pgid), "{:?}", live_group_members(pgid));
        // Killing it again changes nothing and says so.
        let r = env.ok("bash_kill", json!({"job": "job-1"}));
        assert_eq!(r.mutation, Mutation::NotApplied);
        assert!(
            r.content.contains("[job-1 had already ended: "),
            "{}",
            r.content
        );
    }

    fn libc_sigterm() -> i64 {
        15
    }

    #[test]
    fn a_job_ignoring_sigterm_is_killed_after_the_grace() {
        let env = Env::with_limits(Limits {
            bash_kill_grace: Duration::from_millis(300),
            ..Limits::default()
        });
        let r = env.ok(
            "bash",
            json!({"command": "trap '' TERM; echo ready; sleep 100 & wait", "background": true}),
        );
        let pgid = r.details["pid"].as_i64().expect("pid");
        let r = env.ok("bash_kill", json!({"job": "job-1"}));
        assert_eq!(r.details["killed_hard"], true);
        assert!(
            r.content.contains("then SIGKILL after the grace"),
            "{}",
            r.content
        );
        assert!(gone(pgid));
    }

    #[test]
    fn unknown_jobs_name_the_running_ones() {
        let env = Env::new();
        let r = env.err("bash_output", json!({"job": "job-7"}), "not-found");
        assert!(
            r.content
                .contains("there is no job `job-7` in this runtime"),
            "{}",
            r.content
        );
        assert!(
            r.content.contains("jobs running now: none"),
            "{}",
            r.content
        );
        env.ok("bash", json!({"command": "sleep 100", "background": true}));
        let r = env.err("bash_kill", json!({"job": "job-7"}), "not-found");
        assert!(
            r.content
                .contains("jobs running now: job-1 (`sleep 100`, running 0 s)"),
            "{}",
            r.content
        );
        env.ok("bash_kill", json!({"job": "job-1", "signal": "KILL"}));
    }

    #[test]
    fn the_job_limit_refuses_more_and_a_timeout_then_kills() {
        let env = Env::with_limits(Limits {
            bash_max_jobs: 1,
            ..Limits::default()
        });
        env.ok("bash", json!({"command": "sleep 100", "background": true}));
        let r = env.err(
            "bash",
            json!({"command": "sleep 100", "background": true}),
            "spawn",
        );
        assert!(
            r.content
                .contains("no new background job: 1 jobs are already running"),
            "{}",
            r.content
        );
        let r = env.err(
            "bash",
            json!({"command": "sleep 100", "timeout": 0.3}),
            "timed-out",
        );
        assert!(
            r.content
                .contains("(it could not move to the background: bash: no new background job"),
            "{}",
            r.content
        );
        env.ok("bash_kill", json!({"job": "job-1"}));
        // With the one job ended, there is room again.
        env.ok("bash", json!({"command": "true", "background": true}));
    }

    #[test]
    fn reads_are_bounded_and_continue_where_they_stopped() {
        let env = Env::new();
        env.ok(
            "bash",
            json!({"command": "sleep 0.5; seq 1 1000", "background": true}),
        );
        let r = env.ok(
            "bash_output",
            json!({"job": "job-1", "max_bytes": 100, "wait": 10}),
        );
        let shown = r.details["shown_bytes"].as_u64().expect("shown");
        assert!((50..=100).contains(&shown), "{shown}");
        assert!(r.content.starts_with("1\n2\n3\n"), "{}", r.content);
        assert!(
            r.content.contains(&format!(
                "more bytes not shown; call bash_output {{\"job\": \"job-1\"}} again to read on from byte {shown}]"
            )),
            "{}",
            r.content
        );
        // Reading on never repeats or skips a byte.
        let mut all = String::new();
        let mut since = 0;
        loop {
            let r = env.ok(
                "bash_output",
                json!({"job": "job-1", "since": since, "max_bytes": 1000}),
            );
            let next = r.details["next"].as_u64().expect("next");
            let shown = r.details["shown_bytes"].as_u64().expect("shown") as usize;
            all.push_str(&r.content[..shown]);
            if next == since {
                break;
            }
            since = next;
        }
        let want: String = (1..=1000).map(|n| format!("{n}\n")).collect();
        assert_eq!(all, want);
        env.err(
            "bash_output",
            json!({"job": "job-1", "since": 999_999}),
            "invalid-arguments",
        );
    }

    #[test]
    fn the_runtimes_end_ends_its_jobs() {
        let env = Env::new();
        let cx = ToolContext::new(env.root())
            .expect("context")
            .with_output_dir(env.out.path());
        let r = env.call_in(
            &cx,
            "bash",
            json!({"command": "sleep 100 & sleep 100", "background": true}),
        );
        assert!(!r.is_error, "{}", r.content);
        let pgid = r.details["pid"].as_i64().expect("pid");
        assert!(!live_group_members(pgid).is_empty());
        drop(cx);
        assert!(gone(pgid), "{:?}", live_group_members(pgid));
    }

    #[test]
    fn an_ended_job_notifies_the_listener() {
        let env = Env::new();
        let (tx, rx) = std::sync::mpsc::channel();
        let tx = Mutex::new(tx);
        env.cx.jobs().set_listener(Arc::new(move |info| {
            let _ = tx.lock().expect("lock").send(info.clone());
        }));
        env.ok(
            "bash",
            json!({"command": "echo hi; exit 4", "background": true}),
        );
        let info = rx.recv_timeout(Duration::from_secs(10)).expect("ended");
        assert_eq!(info.id, "job-1");
        assert_eq!(info.state, "exited");
        assert_eq!(info.exit_code, Some(4));
        assert_eq!(info.output_bytes, 3);
    }
}
