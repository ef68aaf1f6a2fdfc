/**
 * Ids a client chooses are its organization's (issue 32, item 14): two organizations use the same thread
 * id and assistant id at once, on a real server over SQLite and over Postgres, through the official
 * client. Each creates, runs, reads state and history, updates, copies, searches and deletes its own,
 * and nothing answers differently because the other organization holds the id (no existence oracle).
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Client } from "@langchain/langgraph-sdk";
import { CHECKPOINT_ORG_KEY } from "../../src/storage/ports.js";
import { type FreshDatabase, freshDatabase, PG_SKIP } from "../helpers/postgres.js";
import {
  contents,
  exampleGraph,
  type Hangar,
  http,
  human,
  REPO_ROOT,
  rejection,
  startHangar,
  writeProject,
} from "../helpers/server.js";

const KEY_A = "org-ids-key-a";
const KEY_B = "org-ids-key-b";
const T = { timeout: 120_000 };

function suite(engine: "sqlite" | "postgres") {
  let h: Hangar;
  let db: FreshDatabase | undefined;
  let a: Client;
  let b: Client;
  const as = (key: string) => ({ "x-api-key": key });

  before(async () => {
    if (engine === "postgres") db = await freshDatabase();
    const config = await writeProject({
      graphs: {
        agent: exampleGraph("chat.ts"),
        subgraph: exampleGraph("subgraph.ts"),
        paused_subgraph: `${join(REPO_ROOT, "test/e2e/fixtures/org-ids/paused-subgraph.ts")}:graph`,
      },
    });
    h = await startHangar({
      config,
      env: { HANGAR_API_KEYS: `${KEY_A}:org-a,${KEY_B}:org-b`, ...(db && { POSTGRES_URI: db.uri }) },
    });
    a = new Client({ apiUrl: h.url, apiKey: KEY_A, callerOptions: { maxRetries: 0 } });
    b = new Client({ apiUrl: h.url, apiKey: KEY_B, callerOptions: { maxRetries: 0 } });
  });
  after(async () => {
    await h?.stop();
    await db?.drop();
  });

  test("creating a thread or an assistant with another organization's id is like a fresh id", T, async () => {
    const threadId = randomUUID();
    const assistantId = randomUUID();
    await a.threads.create({ threadId, metadata: { owner: "a" } });
    await a.assistants.create({ graphId: "agent", assistantId, name: "a's" });
    for (const [what, path, body] of [
      ["thread", "/threads", { thread_id: threadId }],
      ["assistant", "/assistants", { assistant_id: assistantId, graph_id: "agent" }],
    ] as const) {
      const fresh = await http(h.url, "POST", path, { ...body, [`${what}_id`]: randomUUID() }, as(KEY_B));
      const taken = await http(h.url, "POST", path, body, as(KEY_B));
      assert.equal(fresh.status, 200, `a fresh ${what} id`);
      assert.equal(taken.status, fresh.status, `another organization's ${what} id answers as a fresh one`);
      // The organization's own id is taken, as before.
      assert.equal((await http(h.url, "POST", path, body, as(KEY_B))).status, 409);
    }
    assert.equal((await a.threads.get(threadId)).metadata?.owner, "a");
    assert.equal((await a.assistants.get(assistantId)).name, "a's");
  });

  test("the same thread and assistant ids, used at once by two organizations, stay apart", T, async () => {
    const threadId = randomUUID();
    const assistantId = randomUUID();
    const orgs = [
      { name: "a", client: () => a },
      { name: "b", client: () => b },
    ];
    await Promise.all(
      orgs.map(async ({ name, client }) => {
        await client().assistants.create({ graphId: "agent", assistantId, name: `${name}'s agent` });
        await client().threads.create({ threadId, metadata: { owner: name } });
        for (let i = 0; i < 3; i++)
          await client().runs.wait(threadId, assistantId, { input: human(`${name} says ${i}`) });
      }),
    );
    for (const { name, client } of orgs) {
      const c = client();
      const state = await c.threads.getState<{ messages: unknown[] }>(threadId);
      const mine = contents(state.values).filter((m) => m.includes("says"));
      assert.ok(mine.length >= 3, `${name}: ${mine}`);
      assert.ok(
        mine.every((m) => m.includes(`${name} says`)),
        `${name} sees only its own messages: ${mine}`,
      );
      const history = await c.threads.getHistory(threadId, { limit: 100 });
      assert.ok(history.length > 0);
      assert.doesNotMatch(JSON.stringify(history), new RegExp(`${name === "a" ? "b" : "a"} says`));
      assert.equal((await c.runs.list(threadId)).length, 3);
      assert.equal((await c.assistants.get(assistantId)).name, `${name}'s agent`);
      const found = await c.threads.search({ ids: [threadId] });
      assert.deepEqual(
        found.map((t) => t.metadata?.owner),
        [name],
      );
    }

    // A state update, a copy and a delete by b touch b's thread only.
    await b.threads.updateState(threadId, {
      values: { messages: [{ role: "human", content: "b updated" }] },
    });
    const copy = await b.threads.copy(threadId);
    assert.match(JSON.stringify((await b.threads.getState(copy.thread_id)).values), /b updated/);
    assert.equal((await rejection(a.threads.get(copy.thread_id))).status, 404);
    await b.threads.delete(threadId);
    assert.equal((await rejection(b.threads.get(threadId))).status, 404);
    const stateA = JSON.stringify((await a.threads.getState(threadId)).values);
    assert.match(stateA, /a says 2/);
    assert.doesNotMatch(stateA, /b says|b updated/);
    // a's thread still runs, and b may make the id its own again.
    await a.runs.wait(threadId, assistantId, { input: human("a again") });
    await b.threads.create({ threadId });
    assert.deepEqual((await b.threads.getState(threadId)).values, {});
    await b.assistants.delete(assistantId);
    assert.equal((await a.assistants.get(assistantId)).name, "a's agent");
    assert.match(JSON.stringify((await a.threads.getState(threadId)).values), /a again/);
  });

  test("a client's configurable or checkpoint cannot name another organization", T, async () => {
    const threadId = randomUUID();
    await a.threads.create({ threadId });
    await a.runs.wait(threadId, "agent", { input: human("a's secret") });
    await b.threads.create({ threadId });
    const forged = { [CHECKPOINT_ORG_KEY]: "org-a" };
    await b.runs.wait(threadId, "agent", { input: human("b forged"), config: { configurable: forged } });
    const read = await http(
      h.url,
      "POST",
      `/threads/${threadId}/state/checkpoint`,
      { checkpoint: { thread_id: threadId, ...forged } },
      as(KEY_B),
    );
    assert.equal(read.status, 200);
    assert.doesNotMatch(read.text, /secret/);
    assert.doesNotMatch(read.text, /__hangar_org/, "the key stays inside the server");
    const stateA = JSON.stringify((await a.threads.getState(threadId)).values);
    assert.match(stateA, /a's secret/);
    assert.doesNotMatch(stateA, /b forged/);
  });

  test("subgraph checkpoints of the same thread id stay in their organization", T, async () => {
    const threadId = randomUUID();
    await Promise.all(
      [
        ["a", a],
        ["b", b],
      ].map(async ([name, c]) => {
        const client = c as Client;
        await client.threads.create({ threadId });
        await client.runs.wait(threadId, "subgraph", { input: human(`${name} nested`) });
      }),
    );
    for (const [name, client] of [
      ["a", a],
      ["b", b],
    ] as const) {
      const state = await client.threads.getState(threadId, undefined, { subgraphs: true });
      assert.ok(
        contents(state.values).includes(`subgraph echo: ${name} nested`),
        JSON.stringify(state.values),
      );
      const history = JSON.stringify(await client.threads.getHistory(threadId, { limit: 100 }));
      assert.match(history, new RegExp(`${name} nested`));
      assert.doesNotMatch(history, new RegExp(`${name === "a" ? "b" : "a"} nested`));
    }
  });

  test(
    "a thread waiting inside a subgraph reads with its subgraphs' state, in each organization",
    T,
    async () => {
      const threadId = randomUUID();
      for (const client of [a, b]) {
        await client.threads.create({ threadId });
        await client.runs.wait(threadId, "paused_subgraph", { input: human("go") });
        // LangGraph reads the waiting subgraph's state with a config it builds from the thread id alone.
        const state = await client.threads.getState(threadId, undefined, { subgraphs: true });
        assert.deepEqual(state.next, ["child"]);
        const task = state.tasks.find((t) => t.name === "child");
        assert.ok(task?.state && "values" in task.state, JSON.stringify(state.tasks));
        assert.equal(task.interrupts[0]?.value, "approve?");
      }
    },
  );
}

describe("client-chosen ids per organization: sqlite", () => suite("sqlite"));
describe("client-chosen ids per organization: postgres", { skip: PG_SKIP }, () => suite("postgres"));
