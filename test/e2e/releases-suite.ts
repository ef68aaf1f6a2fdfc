/**
 * The suite of test/e2e/releases-*.test.ts, one file per fixture project (each file gets the test
 * runner's time limit of its own). Projects on other releases than Hangar's own run unchanged (#33):
 * the fixture projects of
 * fixtures/releases, each with its own node_modules (scripts/install-test-deps.sh installs them from
 * their lockfiles) — LangGraph.js 0.2.74, 0.3.12 and 0.4.9, and LangChain v1 `createAgent` / deepagents on
 * LangGraph.js 1.4 — each served by a real `hangar dev` and driven through the SDK by the scenario of
 * fixtures/releases/scenarios.ts.
 *
 * What a client sees must be what the reference server answered for the same scenario
 * (fixtures/releases/reference-releases.json, recorded once by scripts/record-reference-releases.ts
 * with each project on its own release), except where the reference is wrong: those facts are listed
 * in REFERENCE_BUGS with what Hangar answers instead and why.
 */
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { client, type Hangar, REPO_ROOT, startHangar } from "../helpers/server.js";
import { FIXTURES, type FixtureName, runScenario } from "./fixtures/releases/scenarios.js";

const RELEASES = join(REPO_ROOT, "test", "e2e", "fixtures", "releases");
const recording = JSON.parse(readFileSync(join(RELEASES, "reference-releases.json"), "utf8"));
const versionOf = (fixture: string) =>
  JSON.parse(readFileSync(join(RELEASES, fixture, "node_modules/@langchain/langgraph/package.json"), "utf8"))
    .version as string;

/** The weather graph's thread after each step, as the scripted model makes it. */
const WEATHER_FIRST = ["human: weather: Paris", 'ai:  -> get_weather({"city":"Paris"})'];
const WEATHER_RESUMED = [...WEATHER_FIRST, "tool: It is sunny in Paris", "ai: Answer: It is sunny in Paris"];
const weatherOnOldReleases = {
  // The reference (langgraph-api 2.0) gives LangGraph.js < 0.4 checkpoints without `pending_sends`:
  // every state read and every later run on the thread fails (`checkpoint.pending_sends is not iterable`).
  afterFirst: {
    status: "interrupted",
    state: { messages: WEATHER_FIRST, next: ["tools"], interrupts: [] },
    history: 3,
  },
  resumeStream: ["events", "metadata"],
  afterResume: { status: "idle", state: { messages: WEATHER_RESUMED, next: [], interrupts: [] }, history: 5 },
  secondJoin: ["human: hello", "ai: You said: hello"],
  afterSecond: {
    status: "idle",
    state: {
      messages: [...WEATHER_RESUMED, "human: hello", "ai: You said: hello"],
      next: [],
      interrupts: [],
    },
    history: 8,
  },
  secondRun: "success",
  // Three model calls (the reference's run stopped after one).
  store: { count: 3 },
};

/**
 * Facts where the reference is wrong (or Hangar differs by a documented choice), and what Hangar
 * answers instead. Each value was worked out from the fixture's script, not copied from Hangar's answer.
 */
const REFERENCE_BUGS: Partial<Record<FixtureName, Record<string, Record<string, unknown>>>> = {
  "langgraph-0.2": { weather: weatherOnOldReleases },
  "langgraph-0.3": { weather: weatherOnOldReleases },
  "langchain-1": {
    deep: {
      // Not a bug of the reference but a choice of Hangar's (docs/runs.md): `join` of a run
      // stopped at `interrupt()` returns the state's values with `__interrupt__` (the reference: none).
      secondJoin: ["human: again", 'ai:  -> write_file({"file_path":"/notes.md","content":"Note: again"})'],
    },
  },
};

function expectedFacts(fixture: FixtureName, graph: string): Record<string, unknown> {
  return { ...recording[fixture][graph], ...REFERENCE_BUGS[fixture]?.[graph] };
}

/** The tests of one fixture project. */
export function releaseSuite(fixture: FixtureName): void {
  const graphs: readonly string[] = FIXTURES[fixture];
  describe(`a project on ${fixture} runs unchanged`, () => {
    let h: Hangar;
    before(async () => {
      h = await startHangar({
        config: join(RELEASES, fixture, "langgraph.json"),
        // The TypeScript schemas of a project's own typings take a while on a loaded machine.
        env: { LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS: "120000" },
        startTimeoutMs: 60_000,
      });
      // Read once here, as every graph of the file shares it: the tests after answer from the cache.
      await client(h.url).assistants.getSchemas(graphs[0]);
    });
    after(async () => {
      await h?.stop();
    });

    for (const graph of graphs) {
      test(`${graph}: what a client sees is what the reference answers`, async () => {
        const facts = await runScenario(client(h.url), graph);
        assert.deepEqual(facts, expectedFacts(fixture, graph), h.logs().slice(-4000));
        if (graph === "narrow") {
          // An Annotation graph with a separate input: the state lists every channel, the input its own
          // (worked out from the fixture, not only the reference's answer).
          assert.deepEqual(facts.schemaKeys, {
            input_schema: ["question"],
            output_schema: ["answer", "question"],
            state_schema: ["answer", "question"],
          });
        }
      });
    }

    test("run and checkpoint metadata name the project's LangGraph release", async () => {
      const c = client(h.url);
      const graph = graphs[0];
      const thread = await c.threads.create();
      await c.runs.wait(thread.thread_id, graph, { input: { messages: [{ role: "user", content: "hi" }] } });
      const state = await c.threads.getState(thread.thread_id);
      assert.equal((state.metadata as any).langgraph_version, versionOf(fixture));
    });
  });
}

/** A project on a release older than the supported range is refused at start. */
export function refusedReleaseSuite(): void {
  describe("a release Hangar cannot run is refused at start", () => {
    test("@langchain/langgraph 0.2.8 stops `hangar dev` with the supported range", async () => {
      const dir = join(tmpdir(), `hangar-old-release-${process.pid}`);
      mkdirSync(join(dir, "node_modules", "@langchain", "langgraph"), { recursive: true });
      writeFileSync(
        join(dir, "node_modules", "@langchain", "langgraph", "package.json"),
        JSON.stringify({ name: "@langchain/langgraph", version: "0.2.8" }),
      );
      writeFileSync(join(dir, "graph.mjs"), "export const graph = { stream() {}, getState() {} };\n");
      writeFileSync(join(dir, "langgraph.json"), JSON.stringify({ graphs: { old: "./graph.mjs:graph" } }));
      await assert.rejects(
        startHangar({ config: join(dir, "langgraph.json") }),
        /@langchain\/langgraph 0\.2\.8 is not supported: Hangar runs >=0\.2\.12 <2; upgrade the project's \(for example `npm install @langchain\/langgraph@\^0\.2\.74`/,
      );
    });
  });
}
