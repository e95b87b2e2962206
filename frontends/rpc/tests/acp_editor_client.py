"""Drives `smith acp` as an editor that owns files and terminals, with the
official ACP Python SDK (agent-client-protocol).

Usage: acp_editor_client.py SMITH WORK SCRIPT

Spawns `SMITH acp --provider mock --mock-script SCRIPT --approval full` in
WORK, offering `fs.readTextFile`, `fs.writeTextFile` and `terminal`. The
editor holds notes.txt as an unsaved buffer ("hello buffer"), answers a
read of broken.txt with an error, and runs commands in a pretend terminal
whose output is its own. The first prompt (mode `full`) reads, edits and
writes through the editor, fails a read, is refused a path outside the
project and runs a command in the terminal; the second (mode `workspace`)
runs a command, which smith runs itself. Prints one JSON summary line:
every request smith sent per prompt and each call's final update.
"""

import asyncio
import json
import os
import sys

import acp
from acp import text_block
from acp.schema import (
    ClientCapabilities,
    CreateTerminalResponse,
    FileSystemCapabilities,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

TERMINAL_OUTPUT = "from the editor's terminal\n"


class Editor:
    """The client side: buffers, a pretend terminal, and a log of requests."""

    def __init__(self, work):
        self.buffers = {f"{work}/notes.txt": "hello buffer\n"}
        self.requests = []
        self.updates = []

    def on_connect(self, conn):
        pass

    async def session_update(self, session_id, update, **kwargs):
        self.updates.append(update.model_dump(by_alias=True, exclude_none=True, mode="json"))

    async def read_text_file(self, session_id, path, line=None, limit=None, **kwargs):
        self.requests.append({"method": "fs/read_text_file", "path": path})
        if path.endswith("broken.txt"):
            raise acp.RequestError(-32002, "no such buffer: broken.txt")
        if path not in self.buffers:
            raise acp.RequestError(-32002, f"not open: {path}")
        return ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(self, session_id, path, content, **kwargs):
        self.requests.append({"method": "fs/write_text_file", "path": path, "content": content})
        self.buffers[path] = content
        return WriteTextFileResponse()

    async def create_terminal(self, session_id, command, args=None, env=None, cwd=None,
                              output_byte_limit=None, **kwargs):
        self.requests.append({
            "method": "terminal/create",
            "command": command,
            "args": args,
            "cwd": cwd,
            "outputByteLimit": output_byte_limit,
        })
        return CreateTerminalResponse(terminal_id="term-1")

    async def wait_for_terminal_exit(self, session_id, terminal_id, **kwargs):
        self.requests.append({"method": "terminal/wait_for_exit", "terminalId": terminal_id})
        return WaitForTerminalExitResponse(exit_code=0)

    async def terminal_output(self, session_id, terminal_id, **kwargs):
        self.requests.append({"method": "terminal/output", "terminalId": terminal_id})
        return TerminalOutputResponse(output=TERMINAL_OUTPUT, truncated=False)

    async def kill_terminal(self, session_id, terminal_id, **kwargs):
        self.requests.append({"method": "terminal/kill", "terminalId": terminal_id})
        return KillTerminalResponse()

    async def release_terminal(self, session_id, terminal_id, **kwargs):
        self.requests.append({"method": "terminal/release", "terminalId": terminal_id})
        return ReleaseTerminalResponse()

    async def request_permission(self, *args, **kwargs):
        raise acp.RequestError.method_not_found("session/request_permission")


def calls(updates):
    """Each call's final status and text, and the terminals shown in it."""
    out = {}
    for u in updates:
        if u.get("sessionUpdate") != "tool_call_update":
            continue
        call = out.setdefault(u["toolCallId"], {"terminals": []})
        for c in u.get("content") or []:
            if c.get("type") == "terminal":
                call["terminals"].append(c["terminalId"])
        if u.get("status") in ("completed", "failed"):
            call["status"] = u["status"]
            call["text"] = "".join(
                c.get("content", {}).get("text", "") for c in u.get("content") or []
            )
    return out


async def main(smith, work, script):
    editor = Editor(work)
    summary = {}
    async with acp.spawn_agent_process(
        editor, smith, "acp", "--provider", "mock", "--mock-script", script,
        "--approval", "full", cwd=work,
        # The SDK passes a trimmed environment by default; smith needs
        # SMITH_HOME to record into the test's own store.
        env=dict(os.environ),
    ) as (conn, _process):
        await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
                terminal=True,
            ),
        )
        session = await conn.new_session(cwd=work, mcp_servers=[])
        sid = session.session_id
        first = await conn.prompt(session_id=sid, prompt=[text_block("work in the editor")])
        summary["first_stop"] = first.stop_reason
        summary["first_requests"] = list(editor.requests)
        summary["first_calls"] = calls(editor.updates)

        editor.requests.clear()
        editor.updates.clear()
        await conn.set_session_mode(session_id=sid, mode_id="workspace")
        second = await conn.prompt(session_id=sid, prompt=[text_block("run it here")])
        summary["second_stop"] = second.stop_reason
        summary["second_requests"] = list(editor.requests)
        summary["second_calls"] = calls(editor.updates)
        summary["buffers"] = editor.buffers
        summary["session_id"] = sid
    print(json.dumps(summary))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
