/**
 * Graph schemas read from the TypeScript source, across a project's graph files (examples/langgraph.json:
 * four Annotation graph files, a factory, a zod graph): the first request reads every file that needs it
 * in one program, so the other files' schemas come from the cache; a file that cannot be read fails alone.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { extractAllStaticSchemas, type FileOutcome } from "../../src/runtime/graphs/ts-schemas.js";
import { type Hangar, http, REPO_ROOT, startHangar } from "../helpers/server.js";

const T = { timeout: 120_000 };

describe("graph schemas of a project's graph files", () => {
  let h: Hangar;
  before(async () => {
    h = await startHangar();
  });
  after(async () => {
    await h?.stop();
  });

  test(
    "the first request reads every file that needs its source; the others answer from the cache",
    T,
    async () => {
      const first = await http(h.url, "GET", "/assistants/agent/schemas");
      assert.equal(first.status, 200, first.text);
      assert.ok(first.body.state_schema.definitions, "agent: the schemas from the source");
      for (const graph of ["interrupt", "slow", "subgraph"]) {
        const started = Date.now();
        const res = await http(h.url, "GET", `/assistants/${graph}/schemas`);
        assert.equal(res.status, 200, res.text);
        assert.ok(res.body.state_schema.definitions, `${graph}: the schemas from the source`);
        assert.ok(Date.now() - started < 2_000, `${graph}: answered from the cache`);
      }
      assert.doesNotMatch(h.logs(), /reading the TypeScript types failed/);
    },
  );
});

test("one program for several files: a file that cannot be read fails alone", T, () => {
  const missing = join(REPO_ROOT, "examples", "src", "no-such-graph.ts");
  const interrupt = join(REPO_ROOT, "examples", "src", "interrupt.ts");
  const outcomes = new Map<string, FileOutcome>();
  extractAllStaticSchemas(
    [
      { file: missing, exportNames: ["graph"] },
      { file: interrupt, exportNames: ["graph"] },
    ],
    (file, outcome) => outcomes.set(file, outcome),
  );
  assert.deepEqual(outcomes.get(missing), { ok: false, error: `cannot read ${missing}` });
  const ok = outcomes.get(interrupt);
  assert.ok(ok?.ok, JSON.stringify(ok));
  assert.ok((ok.schemas.graph?.[""]?.state as any)?.properties?.messages);
});
