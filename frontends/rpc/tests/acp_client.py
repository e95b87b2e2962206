"""Drives `smith acp` with the official ACP Python SDK (agent-client-protocol).

Usage: acp_client.py SMITH WORK SCRIPT

Spawns `SMITH acp --provider mock --mock-script SCRIPT` in WORK and plays
the scenario tests/acp.rs describes: a prompt whose scripted model edits
notes.txt after reading it (allowed once), writes new.txt (allowed always in this session)
and runs a bash command (rejected); a second prompt running a slow bash
command that is cancelled mid-tool; then session/load replaying the
session. Checks what it can itself and prints one JSON summary line.
"""

import asyncio
import json
import os
import sys
import time

import acp
from acp import text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    RequestPermissionResponse,
)

# What the client answers, per tool call id.
CHOICES = {"c1": "yes", "c2": "always in this session", "c3": "no", "c4": "yes"}


class Recorder:
    """The client side: records every update and answers permission requests."""

    def __init__(self):
        self.updates = []
        self.permissions = []
        self.conn = None
        self.session_id = None
        self.cancel_on = None
        self.cancel_sent_at = None

    def on_connect(self, conn):
        self.conn = conn

    async def request_permission(self, options, session_id, tool_call, **kwargs):
        call_id = tool_call.tool_call_id
        self.permissions.append(
            {
                "toolCallId": call_id,
                "title": tool_call.title,
                "options": [[o.option_id, o.kind] for o in options],
            }
        )
        choice = CHOICES.get(call_id)
        if choice is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=choice)
        )

    async def session_update(self, session_id, update, **kwargs):
        record = update.model_dump(by_alias=True, exclude_none=True, mode="json")
        self.updates.append(record)
        if (
            self.cancel_on is not None
            and record.get("sessionUpdate") == "tool_call_update"
            and record.get("toolCallId") == self.cancel_on
            and record.get("status") == "in_progress"
            and self.cancel_sent_at is None
        ):
            self.cancel_sent_at = time.monotonic()
            # Cancel mid-tool: the slow command has started.
            asyncio.get_running_loop().create_task(self.conn.cancel(session_id=session_id))

    # The editor capabilities smith does not use yet.
    async def write_text_file(self, *args, **kwargs):
        raise acp.RequestError.method_not_found("fs/write_text_file")

    async def read_text_file(self, *args, **kwargs):
        raise acp.RequestError.method_not_found("fs/read_text_file")


def check(condition, message, evidence):
    if not condition:
        print(f"check failed: {message}\n{json.dumps(evidence, indent=1)}", file=sys.stderr)
        sys.exit(1)


def of_kind(updates, kind):
    return [u for u in updates if u.get("sessionUpdate") == kind]


async def main(smith, work, script):
    client = Recorder()
    summary = {}
    async with acp.spawn_agent_process(
        client,
        smith,
        "acp",
        "--provider",
        "mock",
        "--mock-script",
        script,
        "--approval",
        "ask",
        cwd=work,
        # The SDK passes a trimmed environment by default; smith needs
        # SMITH_HOME to record into the test's own store.
        env=dict(os.environ),
    ) as (conn, _process):
        init = await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
        )
        summary["protocol_version"] = init.protocol_version
        summary["load_session"] = init.agent_capabilities.load_session
        summary["agent"] = init.agent_info.name if init.agent_info else None

        session = await conn.new_session(cwd=work, mcp_servers=[])
        sid = session.session_id
        client.session_id = sid

        first = await conn.prompt(
            session_id=sid, prompt=[text_block("tidy the notes, then check")]
        )
        summary["first_stop"] = first.stop_reason
        turn = list(client.updates)
        summary["thoughts"] = "".join(
            u["content"]["text"] for u in of_kind(turn, "agent_thought_chunk")
        )
        summary["text"] = "".join(
            u["content"]["text"] for u in of_kind(turn, "agent_message_chunk")
        )
        calls = of_kind(turn, "tool_call")
        summary["calls"] = [[c["toolCallId"], c["kind"], c["status"]] for c in calls]
        finals = {}
        for u in of_kind(turn, "tool_call_update"):
            if u.get("status") in ("completed", "failed"):
                finals[u["toolCallId"]] = u
        summary["final_status"] = {k: v["status"] for k, v in finals.items()}
        summary["edit_diff"] = [
            c for c in finals.get("c1", {}).get("content", []) if c.get("type") == "diff"
        ]
        summary["write_diff"] = [
            c for c in finals.get("c2", {}).get("content", []) if c.get("type") == "diff"
        ]
        summary["announced_edit_diff"] = next(
            (c.get("content") for c in calls if c["toolCallId"] == "c1"), None
        )
        summary["denied_text"] = "".join(
            c.get("content", {}).get("text", "") for c in finals.get("c3", {}).get("content", [])
        )
        summary["edit_text"] = "".join(
            c.get("content", {}).get("text", "") for c in finals.get("c1", {}).get("content", [])
        )

        # The second prompt runs a slow command; the client cancels it as
        # soon as it reports in_progress.
        client.updates.clear()
        client.cancel_on = "c4"
        started = time.monotonic()
        second = await conn.prompt(session_id=sid, prompt=[text_block("run the slow check")])
        summary["second_stop"] = second.stop_reason
        summary["cancel_seconds"] = round(time.monotonic() - started, 2)
        check(client.cancel_sent_at is not None, "the slow call never went in_progress", client.updates)
        finals = {
            u["toolCallId"]: u["status"]
            for u in of_kind(client.updates, "tool_call_update")
            if u.get("status") in ("completed", "failed")
        }
        summary["cancelled_status"] = finals.get("c4")
        summary["permissions"] = list(client.permissions)

        # session/load replays the whole conversation.
        client.updates.clear()
        await conn.load_session(cwd=work, session_id=sid, mcp_servers=[])
        replay = list(client.updates)
        summary["replay_user"] = [
            u["content"]["text"] for u in of_kind(replay, "user_message_chunk")
        ]
        summary["replay_calls"] = [u["toolCallId"] for u in of_kind(replay, "tool_call")]
        summary["replay_status"] = {
            u["toolCallId"]: u["status"] for u in of_kind(replay, "tool_call_update")
        }
        summary["session_id"] = sid
    print(json.dumps(summary))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
