// Drives `smith acp` as an editor that owns files and terminals, with the
// official ACP TypeScript SDK (@agentclientprotocol/sdk).
//
// Usage: node acp_editor_client.mjs SDK_DIR SMITH WORK SCRIPT
//
// The scenario of acp_editor_client.py: the editor offers
// fs.readTextFile, fs.writeTextFile and terminal, holds notes.txt as an
// unsaved buffer, fails a read of broken.txt and runs commands in a
// pretend terminal; one prompt in mode `full`, one in `workspace`.
// Prints one JSON summary line.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [sdkDir, smith, work, script] = process.argv.slice(2);
const acp = await import(
  pathToFileURL(join(sdkDir, "node_modules/@agentclientprotocol/sdk/dist/v1/stable/acp.js")).href
);

const TERMINAL_OUTPUT = "from the editor's terminal\n";

const child = spawn(
  smith,
  ["acp", "--provider", "mock", "--mock-script", script, "--approval", "full"],
  { cwd: work, stdio: ["pipe", "pipe", "inherit"] },
);
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const buffers = { [`${work}/notes.txt`]: "hello buffer\n" };
const requests = [];
const updates = [];

const app = acp
  .client({ name: "smith-acp-editor-test" })
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
    requests.push({ method: "fs/read_text_file", path: params.path });
    if (params.path.endsWith("broken.txt")) {
      throw new acp.RequestError(-32002, "no such buffer: broken.txt");
    }
    if (!(params.path in buffers)) throw new acp.RequestError(-32002, `not open: ${params.path}`);
    return { content: buffers[params.path] };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
    requests.push({ method: "fs/write_text_file", path: params.path, content: params.content });
    buffers[params.path] = params.content;
    return {};
  })
  .onRequest(acp.methods.client.terminal.create, ({ params }) => {
    requests.push({
      method: "terminal/create",
      command: params.command,
      args: params.args ?? null,
      cwd: params.cwd ?? null,
      outputByteLimit: params.outputByteLimit ?? null,
    });
    return { terminalId: "term-1" };
  })
  .onRequest(acp.methods.client.terminal.waitForExit, ({ params }) => {
    requests.push({ method: "terminal/wait_for_exit", terminalId: params.terminalId });
    return { exitCode: 0 };
  })
  .onRequest(acp.methods.client.terminal.output, ({ params }) => {
    requests.push({ method: "terminal/output", terminalId: params.terminalId });
    return { output: TERMINAL_OUTPUT, truncated: false };
  })
  .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
    requests.push({ method: "terminal/kill", terminalId: params.terminalId });
    return {};
  })
  .onRequest(acp.methods.client.terminal.release, ({ params }) => {
    requests.push({ method: "terminal/release", terminalId: params.terminalId });
    return {};
  })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params.update);
  });

// Each call's final status and text, and the terminals shown in it.
function calls(list) {
  const out = {};
  for (const u of list) {
    if (u.sessionUpdate !== "tool_call_update") continue;
    const call = (out[u.toolCallId] ??= { terminals: [] });
    for (const c of u.content ?? []) {
      if (c.type === "terminal") call.terminals.push(c.terminalId);
    }
    if (u.status === "completed" || u.status === "failed") {
      call.status = u.status;
      call.text = (u.content ?? []).map((c) => c.content?.text ?? "").join("");
    }
  }
  return out;
}

// The SDK settles a request's promise as soon as its response is read, but
// runs notification handlers through a chain of awaits, so a session/update
// smith wrote before the prompt's response can reach `updates` after the
// prompt's promise settled. Yield to the event loop until every call seen
// has its final status (smith sends each before the response), or 5 s.
async function drained(list) {
  for (let i = 0; i < 250; i++) {
    await new Promise((resolve) => setTimeout(resolve, i === 0 ? 0 : 20));
    if (Object.values(calls(list)).every((call) => call.status)) return;
  }
}

const summary = await app.connectWith(stream, async (ctx) => {
  const s = {};
  await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
  });
  const { sessionId } = await ctx.request(acp.methods.agent.session.new, {
    cwd: work,
    mcpServers: [],
  });
  const first = await ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "work in the editor" }],
  });
  await drained(updates);
  s.first_stop = first.stopReason;
  s.first_requests = [...requests];
  s.first_calls = calls(updates);

  requests.length = 0;
  updates.length = 0;
  await ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: "workspace" });
  const second = await ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "run it here" }],
  });
  await drained(updates);
  s.second_stop = second.stopReason;
  s.second_requests = [...requests];
  s.second_calls = calls(updates);
  s.buffers = buffers;
  s.session_id = sessionId;
  return s;
});

console.log(JSON.stringify(summary));
const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
child.stdin.end();
const code = await exited;
if (code !== 0) {
  console.error(`smith acp exited with ${code} when its input ended`);
  process.exit(1);
}
process.exit(0);
