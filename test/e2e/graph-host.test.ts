/**
 * What graph code gets from its host (src/runtime/graph-host.ts), as under `langgraph dev`: the SDK logger
 * (usable at import time, wired to Hangar's log), a `new Client()` that reaches this server, and
 * LANGGRAPH_API_URL. On executor threads (the default) and on the API thread (`--executor-threads 0`).
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
