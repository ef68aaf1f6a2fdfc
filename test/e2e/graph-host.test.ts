/**
 * What graph code gets from its host (src/runtime/graphs/host.ts), as under `langgraph dev`: the SDK logger
 * (usable at import time, wired to Hangar's log), a `new Client()` that reaches this server, and
 * LANGGRAPH_API_URL. On executor threads (the default) and on the API thread (`--executor-threads 0`).
 * And graph factories: a thread's state is read and updated with the graph its runs' config built.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, test } from "node:test";
import { client, REPO_ROOT, startHangar } from "../helpers/server.js";

const CONFIG = join(REPO_ROOT, "test", "e2e", "fixtures", "host", "langgraph.json");

for (const threads of ["2", "0"]) {
  describe(`graph host (--executor-threads ${threads})`, () => {
    test("getLogger at import and in nodes, the loopback Client, LANGGRAPH_API_URL", {
      timeout: 60_000,
    }, async () => {
      const h = await startHangar({ config: CONFIG, args: ["--executor-threads", threads] });
      try {
        const out = (await client(h.url).runs.wait(null, "host", { input: {} })) as Record<string, unknown>;
        assert.deepEqual(out.assistants, ["host"]);
        assert.equal(out.threadTitle, "made by a node");
        assert.equal(out.apiUrl, h.url);
        // The thread the node made is in this server.
        const made = await client(h.url).threads.search({ metadata: { title: "made by a node" } });
        assert.equal(made.length, 1);
        // The SDK logger writes to Hangar's log, with its fields.
        assert.match(h.logs(), /info host graph module loaded source=graph phase=import/);
        assert.match(h.logs(), /warn host graph node ran source=graph node=ask/);
      } finally {
        await h.stop();
      }
    });
  });
}

describe("graph factories", () => {
  test("state get, update and history build the graph with the config of the thread's runs", {
    timeout: 60_000,
  }, async () => {
    const h = await startHangar({ config: CONFIG });
    try {
      const c = client(h.url);
      const thread = await c.threads.create();
      const config = { configurable: { node_name: "alpha" } };
      const out = (await c.runs.wait(thread.thread_id, "factory", { input: { log: ["in"] }, config })) as any;
      assert.deepEqual(out.log, ["in", "alpha"]);
      // The node exists only in the graph that configurable built: updating the state as it works.
      await c.threads.updateState(thread.thread_id, { values: { log: ["edited"] }, asNode: "alpha" });
      const state = await c.threads.getState(thread.thread_id);
      assert.deepEqual((state.values as any).log, ["in", "alpha", "edited"]);
      const history = await c.threads.getHistory(thread.thread_id);
      assert.ok(history.length >= 3);
      assert.equal((await c.threads.get(thread.thread_id)).config?.configurable?.node_name, "alpha");
      // A later run with another configuration rebinds the thread.
      await c.runs.wait(thread.thread_id, "factory", {
        input: { log: [] },
        config: { configurable: { node_name: "beta" } },
      });
      await c.threads.updateState(thread.thread_id, { values: { log: ["again"] }, asNode: "beta" });
    } finally {
      await h.stop();
    }
  });
});
