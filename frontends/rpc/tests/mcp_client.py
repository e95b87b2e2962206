"""Drives `smith mcp` with the official MCP Python SDK client (PyPI `mcp`).

Usage: python3 mcp_client.py SMITH_BINARY WORKDIR [MODE]

The environment (SMITH_HOME) is passed through to the server. MODE is the
SDK's connect mode: `auto` (the default: it probes `server/discover` and
speaks the stateless 2026-07-28 revision when the server answers, else falls
back to the `initialize` handshake) or `legacy` (the `initialize` handshake
only). The script checks: the negotiated revision (2026-07-28 in auto mode,
the SDK's newest handshake revision 2025-11-25 in legacy mode),
tools/list, tools/call of `read` and `bash` (with progress notifications),
resources/list and resources/read of the server's session, an unknown tool,
and a cancelled `bash` call whose effect is recorded as cancelled and whose
command never finished. It prints one JSON summary line and exits 0, or
exits 1 with the failed check on stderr.
"""

import json
import os
import sys
import time

import anyio
from mcp import Client, MCPError, StdioServerParameters


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def text_of(result):
    return "".join(block.text for block in result.content if getattr(block, "type", "") == "text")


async def session_dump(client, uri):
    read = await client.read_resource(uri)
    check(len(read.contents) == 1, f"resources/read returned {len(read.contents)} contents")
    content = read.contents[0]
    check(content.mime_type == "application/x-ndjson", f"mime type {content.mime_type!r}")
    return [json.loads(line) for line in content.text.splitlines() if line.strip()]


def effect_completions(records):
    """(effect_id, outcome) for every effect completion entry in a dump."""
    return [
        (r["content"]["effect_id"], r["content"]["outcome"])
        for r in records
        if r.get("kind") == "effect_completion" and isinstance(r.get("content"), dict)
    ]


def effect_intents(records):
    """(effect_id, tool) for every effect intent entry in a dump."""
    return [
        (r["content"]["effect_id"], r["content"]["tool"])
        for r in records
        if r.get("kind") == "effect_intent" and isinstance(r.get("content"), dict)
    ]


EXPECTED_VERSION = {"auto": "2026-07-28", "legacy": "2025-11-25"}


async def main(binary, workdir, mode):
    params = StdioServerParameters(command=binary, args=["mcp", "--cwd", workdir], env=dict(os.environ))
    summary = {"mode": mode}
    async with Client(params, raise_exceptions=True, mode=mode) as client:
        summary["protocol_version"] = client.protocol_version
        check(client.protocol_version == EXPECTED_VERSION[mode], f"negotiated {client.protocol_version!r} in {mode} mode")
        check(client.server_info is not None and client.server_info.name == "smith", f"server info {client.server_info!r}")

        tools = (await client.list_tools()).tools
        names = [t.name for t in tools]
        summary["tools"] = names
        check(names == ["read", "write", "edit", "bash", "find", "grep", "ls", "checkpoint_list", "checkpoint_diff", "checkpoint_undo", "checkpoint_redo"], f"tools {names}")
        for tool in tools:
            check(tool.input_schema.get("type") == "object", f"{tool.name} schema {tool.input_schema}")
        by_name = {t.name: t for t in tools}
        check(by_name["read"].annotations.read_only_hint is True, "read is read-only")
        check(by_name["bash"].annotations.destructive_hint is True, "bash is destructive")
        check("command" in by_name["bash"].input_schema.get("properties", {}), "bash takes a command")

        read = await client.call_tool("read", {"path": "hello.txt"})
        check(read.is_error is False, f"read failed: {text_of(read)}")
        check("hello from the fixture" in text_of(read), f"read text {text_of(read)!r}")
        summary["read"] = text_of(read)

        progress = []

        async def on_progress(value, total, message):
            progress.append((value, message))

        bash = await client.call_tool(
            "bash",
            {"command": "echo one; sleep 0.4; echo two; sleep 0.4; echo three"},
            progress_callback=on_progress,
        )
        out = text_of(bash)
        check(bash.is_error is False, f"bash failed: {out}")
        check(out.split() == ["one", "two", "three"] or all(w in out for w in ("one", "two", "three")), f"bash output {out!r}")
        check(len(progress) >= 2, f"progress notifications {progress}")
        values = [v for v, _ in progress]
        check(values == sorted(values) and len(set(values)) == len(values), f"progress not increasing: {values}")
        check(any(m and ("one" in m or "two" in m or "three" in m) for _, m in progress), f"no output in progress: {progress}")
        summary["progress"] = progress

        invalid = await client.call_tool("read", {"path": 7})
        check(invalid.is_error is True, "a call with invalid arguments is a tool error")

        try:
            await client.call_tool("no_such_tool", {})
            check(False, "an unknown tool must be a protocol error")
        except MCPError as e:
            check(e.error.code == -32602, f"unknown tool error code {e.error.code}")
            summary["unknown_tool_error"] = e.error.message

        resources = (await client.list_resources()).resources
        check(len(resources) >= 1, "at least the server's own session is a resource")
        uris = [str(r.uri) for r in resources]
        summary["resources"] = uris

        # The invalid call was rejected before any effect: only read and bash are recorded.
        mine = None
        for uri in uris:
            records = await session_dump(client, uri)
            if [t for _, t in effect_intents(records)] == ["read", "bash"]:
                mine = uri
                check(effect_completions(records) == [("fx-1", "ok"), ("fx-2", "ok")], f"completions {effect_completions(records)}")
        check(mine is not None, f"no session resource records the read and bash effects: {uris}")

        started = time.monotonic()
        with anyio.move_on_after(1.5):
            await client.call_tool("bash", {"command": "sleep 20; touch cancelled-marker"})
            check(False, "the long bash call must not finish")
        # The cancelled call's completion is recorded once the process group is gone.
        deadline = time.monotonic() + 15
        cancelled = []
        while time.monotonic() < deadline:
            cancelled = [e for e, o in effect_completions(await session_dump(client, mine)) if o == "cancelled"]
            if cancelled:
                break
            await anyio.sleep(0.2)
        elapsed = time.monotonic() - started
        check(cancelled, "the cancelled call's effect is recorded as cancelled")
        check(elapsed < 15, f"cancellation took {elapsed:.1f}s")
        check(not os.path.exists(os.path.join(workdir, "cancelled-marker")), "the cancelled command never finished")
        summary["cancelled_effect"] = cancelled[0]

    print(json.dumps(summary))


if __name__ == "__main__":
    try:
        anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "auto")
    except BaseException as e:  # anyio wraps failures in exception groups
        while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
            e = e.exceptions[0]
        print(f"mcp_client check failed: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
