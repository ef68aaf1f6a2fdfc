/**
 * API keys, organizations and tenant isolation (issue 4, items 1–3), against a real server process.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { Client } from "@langchain/langgraph-sdk";
import {
  assertDetail,
  EXAMPLES_CONFIG,
  type Hangar,
  http,
  human,
  REPO_ROOT,
  rejection,
  startHangar,
  tempDir,
  waitFor,
} from "../helpers/server.js";

const run = promisify(execFile);
const hangarCli = (...args: string[]) =>
  run(process.execPath, [join(REPO_ROOT, "bin/hangar.js"), ...args], { cwd: REPO_ROOT });

const KEY_A = "key-for-org-a";
const KEY_B = "key-for-org-b";
const T = { timeout: 60_000 };

describe("API keys and tenant isolation", () => {
  let h: Hangar;
  let a: Client;
  let b: Client;
  const as = (key: string) => ({ "x-api-key": key });

  before(async () => {
    h = await startHangar({ env: { HANGAR_API_KEYS: `${KEY_A}:org-a,${KEY_B}:org-b` } });
    a = new Client({ apiUrl: h.url, apiKey: KEY_A, callerOptions: { maxRetries: 0 } });
    b = new Client({ apiUrl: h.url, apiKey: KEY_B, callerOptions: { maxRetries: 0 } });
  });
  after(async () => {
    await h?.stop();
  });

  const protectedRoutes: [method: string, path: string, body?: unknown][] = [
    ["GET", "/info"],
    ["POST", "/assistants/search", {}],
    ["GET", "/assistants/agent"],
    ["POST", "/threads", {}],
    ["POST", "/threads/search", {}],
    ["POST", "/runs/wait", { assistant_id: "agent", input: human("x") }],
    ["POST", "/runs", { assistant_id: "agent", input: human("x") }],
    ["GET", "/v2/sandboxes/volumes"],
    ["GET", "/v2/sandboxes/templates"],
    ["POST", "/runs/crons/search", {}],
    ["POST", "/store/items/search", { namespace_prefix: ["x"] }],
    ["POST", "/store/namespaces", {}],
    ["GET", "/.well-known/agent-card.json?assistant_id=agent"],
    ["POST", "/a2a/agent", { jsonrpc: "2.0", id: "1", method: "tasks/get", params: { id: "x" } }],
    ["POST", "/mcp", { jsonrpc: "2.0", id: 1, method: "ping" }],
  ];

  test("every route group answers 401 without a key and with a wrong key", T, async () => {
    for (const [method, path, body] of protectedRoutes) {
      assertDetail(await http(h.url, method, path, body), 401, `${method} ${path} without a key`);
      assertDetail(
        await http(h.url, method, path, body, as("wrong")),
        401,
        `${method} ${path} with a wrong key`,
      );
      const ok = await http(h.url, method, path, body, as(KEY_A));
      assert.ok(ok.status < 400, `${method} ${path} with a valid key: ${ok.status} ${ok.text}`);
    }
  });

  test("/ok, /docs and /openapi.json need no key", T, async () => {
    assert.equal((await http(h.url, "GET", "/ok")).status, 200);
    for (const path of ["/docs", "/openapi.json"]) {
      assert.notEqual((await http(h.url, "GET", path)).status, 401, path);
    }
  });

  test("threads and runs of one organization are invisible to another", T, async () => {
    const thread = await a.threads.create({ metadata: { owner: "a" } });
    const result = await a.runs.wait(thread.thread_id, "agent", { input: human("secret") });
    assert.ok(result);
    const [run] = await a.runs.list(thread.thread_id);
    const t = thread.thread_id;

    const calls: [string, () => Promise<unknown>][] = [
      ["get thread", () => b.threads.get(t)],
      ["patch thread", () => b.threads.update(t, { metadata: { x: 1 } })],
      ["state", () => b.threads.getState(t)],
      ["history", () => b.threads.getHistory(t)],
      ["copy", () => b.threads.copy(t)],
      ["list runs", () => b.runs.list(t)],
      ["get run", () => b.runs.get(t, run.run_id)],
      ["join run", () => b.runs.join(t, run.run_id)],
      ["cancel run", () => b.runs.cancel(t, run.run_id)],
      ["create run on it", () => b.runs.create(t, "agent", { input: human("x") })],
      ["delete thread", () => b.threads.delete(t)],
    ];
    for (const [what, p] of calls) {
      const { status } = await rejection(p());
      assert.equal(status, 404, `${what} from another organization`);
    }
    const stream = await http(h.url, "GET", `/threads/${t}/runs/${run.run_id}/stream`, undefined, as(KEY_B));
    assert.equal(stream.status, 404, "join stream from another organization");
    assert.deepEqual(await b.threads.search({ metadata: { owner: "a" } }), []);
    assert.equal(await b.threads.count({ metadata: { owner: "a" } }), 0);
    // …and everything is still there for its owner.
    assert.equal((await a.threads.get(t)).status, "idle");
    assert.equal(await a.threads.count({ metadata: { owner: "a" } }), 1);
  });

  test("a checkpoint in a request body cannot point at another organization's thread", T, async () => {
    const mine = (await a.threads.create()).thread_id;
    await a.runs.wait(mine, "agent", { input: human("a's secret") });
    const theirs = (await b.threads.create()).thread_id;
    await b.runs.wait(theirs, "agent", { input: human("b's own") });
    const other = { checkpoint: { thread_id: mine } };
    const read = await http(h.url, "POST", `/threads/${theirs}/state/checkpoint`, other, as(KEY_B));
    assert.equal(read.status, 200);
    assert.doesNotMatch(read.text, /secret/, "state read through a foreign thread id");
    const history = await http(h.url, "POST", `/threads/${theirs}/history`, other, as(KEY_B));
    assert.doesNotMatch(history.text, /secret/, "history read through a foreign thread id");
    const write = {
      values: { messages: [{ role: "human", content: "INJECTED" }] },
      as_node: "echo",
      ...other,
    };
    await http(h.url, "POST", `/threads/${theirs}/state`, write, as(KEY_B));
    const state = await a.threads.getState(mine);
    assert.doesNotMatch(
      JSON.stringify(state.values),
      /INJECTED/,
      "state written through a foreign thread id",
    );
  });

  test("only the default organization may change the shared default assistants", T, async () => {
    const res = await http(h.url, "PATCH", "/assistants/agent", { metadata: { evil: 1 } }, as(KEY_A));
    assertDetail(res, 409, "patching a default assistant from another organization");
    assert.match(res.body.detail, /create an assistant of your own/);
    const latest = await http(h.url, "POST", "/assistants/agent/latest", { version: 1 }, as(KEY_A));
    assertDetail(latest, 409, "setting the version of a default assistant");
    const seen = await b.assistants.get("agent");
    assert.equal(seen.metadata?.evil, undefined);
    assert.equal(seen.version, 1);
  });

  test("user assistants are per organization; system assistants are shared", T, async () => {
    const mine = await a.assistants.create({ graphId: "agent", name: "a-only", metadata: { team: "a" } });
    assert.equal((await rejection(b.assistants.get(mine.assistant_id))).status, 404);
    assert.equal((await rejection(b.assistants.update(mine.assistant_id, { name: "stolen" }))).status, 404);
    assert.equal((await rejection(b.assistants.delete(mine.assistant_id))).status, 404);
    assert.deepEqual(await b.assistants.search({ metadata: { team: "a" } }), []);
    const systemB = await b.assistants.search({ graphId: "agent", metadata: { created_by: "system" } });
    assert.equal(systemB.length, 1, "the default assistant is visible to every organization");
    // A run of org B on org A's assistant is refused as if it did not exist.
    assert.equal((await rejection(b.runs.wait(null, mine.assistant_id, { input: human("x") }))).status, 404);
  });

  test("crons are per organization", T, async () => {
    const cron = await a.crons.create("agent", { schedule: "0 0 1 1 *", input: human("new year") });
    assert.deepEqual(await b.crons.search({}), []);
    assert.equal(await b.crons.count({}), 0);
    assert.equal((await rejection(b.crons.update(cron.cron_id, { enabled: false }))).status, 404);
    assert.equal((await rejection(b.crons.delete(cron.cron_id))).status, 404);
    assert.equal((await a.crons.search({})).length, 1);
    await a.crons.delete(cron.cron_id);
  });

  test("volumes and templates are per organization, and names may be reused", T, async () => {
    const volume = { name: "shared-name", size: "1Gi" };
    assert.equal((await http(h.url, "POST", "/v2/sandboxes/volumes", volume, as(KEY_A))).status, 201);
    assert.equal((await http(h.url, "POST", "/v2/sandboxes/volumes", volume, as(KEY_B))).status, 201);
    const template = {
      name: "tpl",
      image: "hangar/host",
      resources: { cpu: "500m", memory: "512Mi" },
      volume_mounts: [{ volume_name: "shared-name", mount_path: "/data" }],
    };
    assert.equal((await http(h.url, "POST", "/v2/sandboxes/templates", template, as(KEY_A))).status, 201);
    assert.equal((await http(h.url, "GET", "/v2/sandboxes/templates/tpl", undefined, as(KEY_B))).status, 404);
    const listB = await http(h.url, "GET", "/v2/sandboxes/volumes", undefined, as(KEY_B));
    assert.deepEqual(
      listB.body.volumes.map((v: { name: string }) => v.name),
      ["shared-name"],
    );
    // Org B deleting its own volume leaves org A's (mounted by A's template) alone.
    assert.equal(
      (await http(h.url, "DELETE", "/v2/sandboxes/volumes/shared-name", undefined, as(KEY_B))).status,
      204,
    );
    assert.equal(
      (await http(h.url, "GET", "/v2/sandboxes/volumes/shared-name", undefined, as(KEY_A))).status,
      200,
    );
  });

  test("keys made with `hangar keys create` work at once and stop working when revoked", T, async () => {
    const { stdout } = await hangarCli("keys", "create", "--org", "org-c", "--json", "--data-dir", h.dataDir);
    const created = JSON.parse(stdout);
    assert.match(created.key, /^hgr_/);
    const c = { "x-api-key": created.key };
    const ok = await waitFor(
      async () => (await http(h.url, "POST", "/threads", {}, c)).status === 200 || undefined,
      {
        timeoutMs: 5000,
      },
    );
    assert.ok(ok);
    const listed = JSON.parse((await hangarCli("keys", "list", "--json", "--data-dir", h.dataDir)).stdout);
    const entry = listed.find((k: { id: string }) => k.id === created.id);
    assert.ok(entry, "listed");
    assert.equal(entry.key, undefined, "the key itself is never listed");
    await hangarCli("keys", "revoke", created.id, "--data-dir", h.dataDir);
    assertDetail(await http(h.url, "POST", "/threads", {}, c), 401, "revoked key");
  });
});

describe("open mode and exposure", () => {
  test("with no keys configured the API is open and any X-Api-Key header is ignored", T, async () => {
    const h = await startHangar();
    try {
      assert.equal((await http(h.url, "POST", "/threads", {})).status, 200);
      assert.equal((await http(h.url, "POST", "/threads", {}, { "x-api-key": "anything" })).status, 200);
    } finally {
      await h.stop();
    }
  });

  test(
    "`hangar serve` refuses a non-loopback address with no key unless told it is meant to be open",
    T,
    async () => {
      const dataDir = await tempDir("hangar-auth-");
      const refused = await hangarCli(
        "serve",
        "--config",
        EXAMPLES_CONFIG,
        "--host",
        "0.0.0.0",
        "--port",
        "0",
        "--data-dir",
        dataDir,
      ).then(
        () => null,
        (err: { code: number; stderr: string }) => err,
      );
      assert.ok(refused, "serve must refuse");
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /Refusing to serve on 0\.0\.0\.0 without API keys/);
      assert.match(refused.stderr, /--allow-unauthenticated/);
    },
  );
});

describe("store isolation", () => {
  test("store items written by a graph or the API belong to the caller's organization", T, async () => {
    const h = await startHangar({
      config: join(REPO_ROOT, "test/e2e/fixtures/memory/langgraph.json"),
      env: { HANGAR_API_KEYS: `${KEY_A}:org-a,${KEY_B}:org-b` },
    });
    try {
      const a = new Client({ apiUrl: h.url, apiKey: KEY_A, callerOptions: { maxRetries: 0 } });
      const b = new Client({ apiUrl: h.url, apiKey: KEY_B, callerOptions: { maxRetries: 0 } });
      // A graph run of org A writes a memory through config.store.
      const out = (await a.runs.wait(null, "memory", {
        input: { user: "u1", remember: "likes tea", key: "k1" },
      })) as {
        recalled: string[];
      };
      assert.deepEqual(out.recalled, ["likes tea"]);
      assert.deepEqual((await a.store.getItem(["memories", "u1"], "k1"))?.value, { text: "likes tea" });
      assert.equal(
        await b.store.getItem(["memories", "u1"], "k1"),
        null,
        "org B must not read org A's memory",
      );
      assert.deepEqual((await b.store.searchItems(["memories"])).items, []);
      // Org B's graph sees only org B's memories, and may use the same namespace and key.
      const outB = (await b.runs.wait(null, "memory", {
        input: { user: "u1", remember: "likes coffee", key: "k1" },
      })) as {
        recalled: string[];
      };
      assert.deepEqual(outB.recalled, ["likes coffee"]);
      assert.deepEqual((await a.store.getItem(["memories", "u1"], "k1"))?.value, { text: "likes tea" });
    } finally {
      await h.stop();
    }
  });
});
