"""Answers a plugin's question through MCP elicitation with the official MCP
Python SDK client (PyPI `mcp`).

Usage: python3 mcp_elicit.py SMITH_BINARY WORKDIR

SMITH_HOME (passed through) has test/kit installed; WORKDIR holds
`confirm-me.txt`. In the SDK's `legacy` mode (the `initialize` handshake,
where the client declares elicitation) the script calls `read` on
`confirm-me.txt` twice: the plugin's question arrives as an elicitation
request, accepted with `yes` the first time (the file is read) and declined
the second (the question takes its default, `no`, and the call is blocked).
It prints one JSON summary line and exits 0, or exits 1 with the failed
check on stderr.
"""

import json
import os
import sys

import anyio
from mcp import Client, StdioServerParameters
from mcp import types


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def text_of(result):
    return "".join(block.text for block in result.content if getattr(block, "type", "") == "text")


async def main(binary, workdir):
    params = StdioServerParameters(command=binary, args=["mcp", "--cwd", workdir], env=dict(os.environ))
    asked = []
    answers = [types.ElicitResult(action="accept", content={"answer": "yes"}), types.ElicitResult(action="decline")]

    async def on_elicit(context, request):
        asked.append({"message": request.message, "schema": request.requested_schema})
        return answers[len(asked) - 1]

    summary = {}
    async with Client(params, raise_exceptions=True, mode="legacy", elicitation_callback=on_elicit) as client:
        accepted = await client.call_tool("read", {"path": "confirm-me.txt"})
        check(accepted.is_error is False, f"the accepted call failed: {text_of(accepted)}")
        summary["accepted"] = text_of(accepted)
        declined = await client.call_tool("read", {"path": "confirm-me.txt"})
        check(declined.is_error is True, f"the declined call ran: {text_of(declined)}")
        summary["declined"] = text_of(declined)
    summary["asked"] = asked
    print(json.dumps(summary))


if __name__ == "__main__":
    try:
        anyio.run(main, sys.argv[1], sys.argv[2])
    except BaseException as e:  # anyio wraps failures in exception groups
        while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
            e = e.exceptions[0]
        print(f"mcp_elicit check failed: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
