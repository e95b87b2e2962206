// Drives `smith acp` with the official ACP TypeScript SDK
// (@agentclientprotocol/sdk).
//
// Usage: node acp_client.mjs SDK_DIR SMITH WORK SCRIPT
//
// SDK_DIR holds node_modules/@agentclientprotocol/sdk (scripts/setup
// installs it there). Spawns `SMITH acp --provider mock --mock-script
// SCRIPT` in WORK and plays the scenario of tests/acp.rs: a prompt whose
// scripted model edits (allowed once), writes (allowed always in this
// session) and runs a command (rejected); a second prompt whose slow
// command is cancelled mid-tool; then session/load. Prints one JSON
// summary line.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [sdkDir, smith, work, script] = process.argv.slice(2);
const acp = await import(
  pathToFileURL(join(sdkDir, "node_modules/@agentclientprotocol/sdk/dist/v1/stable/acp.js")).href
);

const CHOICES = { c1: "yes", c2: "always in this session", c3: "no", c4: "yes" };

const child = spawn(
  smith,
  ["acp", "--provider", "mock", "--mock-script", script, "--approval", "ask"],
  { cwd: work, stdio: ["pipe", "pipe", "inherit"] },
);
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const updates = [];
const permissions = [];
let cancelOn = null;
let cancelSent = false;
let sessionId = null;

function fail(message, evidence) {
  console.error(`check failed: ${message}\n${JSON.stringify(evidence, null, 1)}`);
  process.exit(1);
}

const app = acp
  .client({ name: "smith-acp-test" })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    const id = params.toolCall.toolCallId;
    permissions.push({
      toolCallId: id,
      title: params.toolCall.title,
      options: params.options.map((o) => [o.optionId, o.kind]),
    });
    const choice = CHOICES[id];
    if (!choice) return { outcome: { outcome: "cancelled" } };
    return { outcome: { outcome: "selected", optionId: choice } };
  })
  .onNotification(acp.methods.client.session.update, ({ params, agent }) => {
    const u = params.update;
    updates.push(u);
    if (
      cancelOn &&
      !cancelSent &&
      u.sessionUpdate === "tool_call_update" &&
      u.toolCallId === cancelOn &&
      u.status === "in_progress"
    ) {
      cancelSent = true;
      agent.notify(acp.methods.agent.session.cancel, { sessionId: params.sessionId });
    }
  });

const ofKind = (list, kind) => list.filter((u) => u.sessionUpdate === kind);
const finals = (list) => {
  const out = {};
  for (const u of ofKind(list, "tool_call_update")) {
    if (u.status === "completed" || u.status === "failed") out[u.toolCallId] = u;
  }
  return out;
};

const summary = await app.connectWith(stream, async (ctx) => {
  const s = {};
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {},
  });
  s.protocol_version = init.protocolVersion;
  s.load_session = init.agentCapabilities?.loadSession ?? false;
  s.agent = init.agentInfo?.name ?? null;

  const session = await ctx.request(acp.methods.agent.session.new, { cwd: work, mcpServers: [] });
  sessionId = session.sessionId;

  const first = await ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "tidy the notes, then check" }],
  });
  s.first_stop = first.stopReason;
  const turn = [...updates];
  s.thoughts = ofKind(turn, "agent_thought_chunk").map((u) => u.content.text).join("");
  s.text = ofKind(turn, "agent_message_chunk").map((u) => u.content.text).join("");
  const calls = ofKind(turn, "tool_call");
  s.calls = calls.map((c) => [c.toolCallId, c.kind, c.status]);
  const done = finals(turn);
  s.final_status = Object.fromEntries(Object.entries(done).map(([k, v]) => [k, v.status]));
  s.edit_diff = (done.c1?.content ?? []).filter((c) => c.type === "diff");
  s.write_diff = (done.c2?.content ?? []).filter((c) => c.type === "diff");
  s.announced_edit_diff = calls.find((c) => c.toolCallId === "c1")?.content ?? null;
  s.denied_text = (done.c3?.content ?? []).map((c) => c.content?.text ?? "").join("");
  s.edit_text = (done.c1?.content ?? []).map((c) => c.content?.text ?? "").join("");

  updates.length = 0;
  cancelOn = "c4";
  const started = Date.now();
  const second = await ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "run the slow check" }],
  });
  s.second_stop = second.stopReason;
  s.cancel_seconds = (Date.now() - started) / 1000;
  if (!cancelSent) fail("the slow call never went in_progress", updates);
  s.cancelled_status = finals(updates).c4?.status ?? null;
  s.permissions = [...permissions];

  updates.length = 0;
  await ctx.request(acp.methods.agent.session.load, { cwd: work, sessionId, mcpServers: [] });
  const replay = [...updates];
  s.replay_user = ofKind(replay, "user_message_chunk").map((u) => u.content.text);
  s.replay_calls = ofKind(replay, "tool_call").map((u) => u.toolCallId);
  s.replay_status = Object.fromEntries(
    ofKind(replay, "tool_call_update").map((u) => [u.toolCallId, u.status]),
  );
  s.session_id = sessionId;
  return s;
});

console.log(JSON.stringify(summary));
// The end of its input ends smith acp; it must exit on its own.
const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
child.stdin.end();
const timer = setTimeout(() => fail("smith acp did not exit when its input ended", {}), 20000);
const code = await exited;
clearTimeout(timer);
if (code !== 0) fail(`smith acp exited with ${code} when its input ended`, {});
process.exit(0);
