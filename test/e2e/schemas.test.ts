/**
 * Graph schemas (`/assistants/{id}/schemas`, `/subgraphs`, `/graph`) of the fixture project
 * test/e2e/fixtures/schemas, compared with what the reference server (`langgraph dev`,
 * @langchain/langgraph-api 2.0.0) answered for the same project: fixtures/schemas/reference.json,
 * recorded by bench/record-schemas.ts. Where Hangar answers otherwise on purpose, the test says why.
 *
 * The fixture gets its own copy of `@langchain/langgraph` (Hangar's, copied into its node_modules: a
 * distinct module instance), so the zod registry metadata is only there if the schemas are read with
 * the graph's own copy.
 */
import assert from "node:assert/strict";
import { cpSync, existsSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Client } from "@langchain/langgraph-sdk";
import { client, type Hangar, http, REPO_ROOT, startHangar } from "../helpers/server.js";

const FIXTURE = join(REPO_ROOT, "test", "e2e", "fixtures", "schemas");
const CONFIG = join(FIXTURE, "langgraph.json");
const REFERENCE = JSON.parse(readFileSync(join(FIXTURE, "reference.json"), "utf8"));
const OWN_LANGGRAPH = join(FIXTURE, "node_modules", "@langchain", "langgraph");
const HANGAR_LANGGRAPH = join(REPO_ROOT, "node_modules", "@langchain", "langgraph");
// Reading a graph's TypeScript source takes seconds (more on a loaded machine).
const T = { timeout: 120_000 };

/** Gives the fixture a copy of LangGraph of its own (node_modules is not committed). */
function ownLangGraph(): void {
  const version = (dir: string) => JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).version;
  if (existsSync(OWN_LANGGRAPH) && version(OWN_LANGGRAPH) === version(HANGAR_LANGGRAPH)) return;
  const staging = `${OWN_LANGGRAPH}.${process.pid}`;
  mkdirSync(join(FIXTURE, "node_modules", "@langchain"), { recursive: true });
  cpSync(HANGAR_LANGGRAPH, staging, { recursive: true });
  rmSync(OWN_LANGGRAPH, { recursive: true, force: true });
  renameSync(staging, OWN_LANGGRAPH);
}

/** A symbol-keyed member (`__@toStringTag@233`, its number varies by program), which Hangar leaves out. */
const withoutSymbolKeys = (schema: unknown): unknown =>
  JSON.parse(JSON.stringify(schema), (key, value) => (/^__@.+@\d+$/.test(key) ? undefined : value));

const reference = (graph: string) => withoutSymbolKeys(REFERENCE[graph].schemas) as Record<string, any>;

/** Hangar's `/subgraphs` entries use the keys of the official server (`state_schema`…), the JS reference `state`…. */
const asReferenceSubgraph = (s: any) =>
  Object.fromEntries(
    Object.entries({
      state: s.state_schema,
      input: s.input_schema,
      output: s.output_schema,
      config: s.config_schema,
    })
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k, withoutSymbolKeys(v)]),
  );

describe("graph schemas", () => {
  let h: Hangar;
  let c: Client;
  before(async () => {
    ownLangGraph();
    h = await startHangar({ config: CONFIG });
    c = client(h.url);
  });
  after(async () => {
    await h?.stop();
  });

  test("the fixture's LangGraph is another copy than Hangar's", () => {
    assert.notEqual(realpathSync(OWN_LANGGRAPH), realpathSync(HANGAR_LANGGRAPH));
  });

  test("runs are not held up while a graph's TypeScript source is read", T, async () => {
    const started = Date.now();
    let schemasAt = 0;
    const schemas = c.assistants.getSchemas("annotated").then((s) => {
      schemasAt = Date.now();
      return s;
    });
    const out = await c.runs.wait(null, "state_schema", { input: { mode: "slow" } });
    const runAt = Date.now();
    assert.deepEqual(
      (out as any).messages.map((m: any) => m.content),
      ["slow: ok"],
    );
    await schemas;
    assert.ok(
      runAt <= schemasAt,
      `the run ended ${runAt - started} ms in, the schemas ${schemasAt - started} ms in`,
    );
  });

  test(
    "Annotation graph: input, output, state and config schemas as the reference derives them",
    T,
    async () => {
      const s = await c.assistants.getSchemas("annotated");
      const ref = reference("annotated");
      assert.equal(s.graph_id, "annotated");
      for (const key of [
        "input_schema",
        "output_schema",
        "state_schema",
        "config_schema",
        "context_schema",
      ]) {
        assert.deepEqual((s as any)[key], ref[key], key);
      }
      // What the issue asks, spelled out.
      const state = s.state_schema as any;
      assert.deepEqual(state.properties.mode, {
        description: "How hard to think.",
        enum: ["fast", "slow"],
        type: "string",
      });
      assert.deepEqual(state.properties.messages.items, {
        $ref: "#/definitions/BaseMessage<MessageStructure<MessageToolSet>,MessageType>",
      });
      assert.deepEqual((s.config_schema as any).properties.model_name, { type: "string" });
      // Cached: the same answer at once.
      const again = Date.now();
      assert.deepEqual(await c.assistants.getSchemas("annotated"), s);
      assert.ok(Date.now() - again < 2_000, "the second answer comes from the cache");
    },
  );

  test("Annotation graph with input and output annotations", T, async () => {
    const s = await c.assistants.getSchemas("annotated_io");
    const ref = reference("annotated_io");
    for (const key of ["input_schema", "output_schema", "config_schema", "context_schema"]) {
      assert.deepEqual((s as any)[key], ref[key], key);
    }
    // Differs on purpose: the reference's state schema is the input's ({question}), as its type template
    // looks for `RunInput` where LangGraph 1.x names it `~RunInput`; Hangar's lists every state channel
    // (update types), as the official server's `state_schema` does.
    assert.deepEqual(ref.state_schema.properties, { question: { type: "string" } });
    assert.deepEqual(s.state_schema, {
      type: "object",
      properties: {
        scratch: { type: "array", items: { type: "number" } },
        answer: { type: "string" },
        level: { enum: ["high", "low"], type: "string" },
        question: { type: "string" },
      },
      $schema: "http://json-schema.org/draft-07/schema#",
    });
  });

  test(
    "zod state: registry and withLangGraph metadata, read with the project's own LangGraph",
    T,
    async () => {
      const s = await c.assistants.getSchemas("zod_state");
      const ref = reference("zod_state");
      for (const key of [
        "input_schema",
        "output_schema",
        "state_schema",
        "config_schema",
        "context_schema",
      ]) {
        assert.deepEqual((s as any)[key], ref[key], key);
      }
      const state = s.state_schema as any;
      assert.equal(state.properties.messages.langgraph_type, "messages");
      assert.equal(state.properties.total.description, "Added to the total", "the reducer's input schema");
    },
  );

  test("zod state with z.custom<BaseMessage[]>() messages: the metadata still shows", T, async () => {
    const s = await c.assistants.getSchemas("zod_custom");
    const ref = reference("zod_custom");
    for (const key of ["config_schema", "context_schema"]) assert.deepEqual((s as any)[key], ref[key], key);
    // Differs on purpose: zod 4 refuses to render a custom type, and the reference then answers no input,
    // output or state schema; Hangar renders the custom type as {} with its metadata.
    assert.equal(ref.state_schema, undefined);
    const zodRef = reference("zod_state");
    for (const key of ["input_schema", "output_schema", "state_schema"]) {
      const expected = structuredClone(zodRef[key]);
      expected.properties.messages = { langgraph_type: "messages" };
      assert.deepEqual((s as any)[key], expected, key);
    }
  });

  test("StateSchema graph: the schemas StateSchema renders, with the messages metadata", T, async () => {
    const s = await c.assistants.getSchemas("state_schema");
    const ref = reference("state_schema");
    for (const key of ["output_schema", "state_schema"]) assert.deepEqual((s as any)[key], ref[key], key);
    // The input schema is StateSchema's own rendering, which changed between LangGraph 1.1.5 (the
    // reference's, which leaves `messages` out) and this project's 1.7.
    const { messages, ...rest } = (s.input_schema as any).properties;
    assert.deepEqual(messages, { langgraph_type: "messages", description: "A list of chat messages" });
    assert.deepEqual(rest, ref.input_schema.properties);
    // Differs on purpose: without a config schema the reference answers none; Hangar an empty object.
    assert.equal(ref.config_schema, undefined);
    assert.deepEqual(s.config_schema, { type: "object", properties: {} });
  });

  test("subgraphs: the child of an Annotation graph has its own schemas", T, async () => {
    const subs = await c.assistants.getSubgraphs("annotated", { recurse: true });
    assert.deepEqual(Object.keys(subs), ["child"]);
    assert.deepEqual(asReferenceSubgraph(subs.child), withoutSymbolKeys(REFERENCE.annotated.subgraphs.child));
    const child = subs.child as any;
    assert.deepEqual(child.state_schema.properties.mode, { enum: ["fast", "slow"], type: "string" });
    assert.deepEqual(await c.assistants.getSubgraphs("annotated", { namespace: "child" }), subs);
    for (const graph of ["annotated_io", "zod_state", "zod_custom", "state_schema"]) {
      assert.deepEqual(await c.assistants.getSubgraphs(graph), REFERENCE[graph].subgraphs, graph);
    }
  });

  test("graph drawings (xray) have the reference's nodes and edges", T, async () => {
    for (const graph of Object.keys(REFERENCE)) {
      const ours = await c.assistants.getGraph(graph, { xray: true });
      const ref = REFERENCE[graph].graph;
      // LangGraph 1.7 adds `metadata: {}` to each node; the reference's 1.1.5 does not.
      const nodes = ours.nodes.map(({ metadata, ...n }: any) => n);
      assert.deepEqual(nodes, ref.nodes, `${graph} nodes`);
      assert.deepEqual(ours.edges, ref.edges, `${graph} edges`);
    }
  });
});

describe("graph schemas when the TypeScript source cannot be read in time", () => {
  let h: Hangar;
  before(async () => {
    ownLangGraph();
    h = await startHangar({ config: CONFIG, env: { LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS: "1" } });
  });
  after(async () => {
    await h?.stop();
  });

  test("the schemas list the state's channels, and the server says why", T, async () => {
    const res = await http(h.url, "GET", "/assistants/annotated/schemas");
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body.state_schema.properties).sort(), [
      "count",
      "messages",
      "mode",
      "note",
      "options",
      "tags",
    ]);
    assert.match(h.logs(), /reading the TypeScript types failed/);
    // zod graphs need no source: their schemas are whole.
    const zod = await http(h.url, "GET", "/assistants/zod_state/schemas");
    assert.equal(zod.body.state_schema.properties.messages.langgraph_type, "messages");
  });
});
