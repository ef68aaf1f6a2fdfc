import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import type { Client } from "@langchain/langgraph-sdk";
import {
  assertDetail,
  assertValidation,
  checkAll,
  client,
  defaultAssistantId,
  type Hangar,
  http,
  rejection,
  startHangar,
  UUID_RE,
} from "../helpers/server.js";

const T = { timeout: 30_000 };
const GRAPHS = ["agent", "slow", "interrupt", "fail", "subgraph", "custom_state"];

const propertyNames = (schema: any): string[] => Object.keys(schema?.properties ?? {}).sort();

describe("assistants", () => {
  let h: Hangar;
  let c: Client;
  before(async () => {
    h = await startHangar();
    c = client(h.url);
  });
  after(async () => {
    await h?.stop();
  });

  test(
    "every graph has a default assistant with the uuid5 id, the graph's name and created_by system",
    T,
    async () => {
      for (const graphId of GRAPHS) {
        const id = defaultAssistantId(graphId);
        const a = await c.assistants.get(id);
        assert.equal(a.assistant_id, id, graphId);
        assert.equal(a.graph_id, graphId);
        assert.equal(a.name, graphId);
        assert.equal(a.metadata?.created_by, "system");
        assert.equal(a.version, 1);
        // A graph id is accepted wherever an assistant id is.
        const byGraph = await c.assistants.get(graphId);
        assert.equal(byGraph.assistant_id, id);
      }
      const system = await c.assistants.search({ metadata: { created_by: "system" }, limit: 100 });
      assert.deepEqual(
        system.map((a) => a.assistant_id).sort(),
        GRAPHS.map(defaultAssistantId).sort(),
        "exactly the system assistants carry created_by: system",
      );
    },
  );

  test("create returns version 1 with what was given; get reads it back", T, async () => {
    const created = await c.assistants.create({
      graphId: "agent",
      name: "mine",
      description: "a test assistant",
      config: { configurable: { model: "none" } },
      context: { tone: "dry" },
      metadata: { team: "e2e" },
    });
    assert.match(created.assistant_id, UUID_RE);
    assert.equal(created.graph_id, "agent");
    assert.equal(created.name, "mine");
    assert.equal(created.description, "a test assistant");
    assert.equal(created.version, 1);
    assert.equal((created.config.configurable as any)?.model, "none");
    assert.deepEqual(created.context, { tone: "dry" });
    assert.deepEqual(created.metadata, { team: "e2e" });
    assert.equal(typeof created.created_at, "string");
    assert.ok(!Number.isNaN(Date.parse(created.created_at)));
    const got = await c.assistants.get(created.assistant_id);
    assert.deepEqual(got, created);
  });

  test("create with an existing id: if_exists raise → 409, do_nothing → the existing one", T, async () => {
    const id = randomUUID();
    const first = await c.assistants.create({ graphId: "agent", assistantId: id, name: "first" });
    assert.equal(first.assistant_id, id);
    const raw = await http(h.url, "POST", "/assistants", {
      graph_id: "agent",
      assistant_id: id,
      name: "second",
    });
    assertDetail(raw, 409, "create duplicate (default raise)");
    const raised = await http(h.url, "POST", "/assistants", {
      graph_id: "agent",
      assistant_id: id,
      if_exists: "raise",
    });
    assertDetail(raised, 409, "create duplicate (raise)");
    const kept = await c.assistants.create({
      graphId: "agent",
      assistantId: id,
      ifExists: "do_nothing",
      name: "x",
    });
    assert.equal(kept.assistant_id, id);
    assert.equal(kept.name, "first");
    assert.equal(kept.version, 1);
  });

  test("create for a graph that does not exist is refused", T, async () => {
    // Guess: the reference JS server accepts it (runs then fail); an SDK user expects a 4xx up front.
    const res = await http(h.url, "POST", "/assistants", { graph_id: "no_such_graph" });
    assert.ok(res.status === 404 || res.status === 422, `status ${res.status}: ${res.text}`);
    assert.ok(res.body?.detail, res.text);
  });

  test("get of an unknown assistant is a 404 JSON detail", T, async () => {
    assertDetail(await http(h.url, "GET", `/assistants/${randomUUID()}`), 404, "unknown uuid");
    assertDetail(await http(h.url, "GET", "/assistants/not-a-graph-nor-uuid"), 404, "unknown graph id");
    const err = await rejection(c.assistants.get(randomUUID()));
    assert.equal(err.status, 404);
  });

  test("patch makes a new version every time and merges metadata; versions and latest", T, async () => {
    const a = await c.assistants.create({ graphId: "agent", metadata: { team: "x" }, name: "v" });
    const v2 = await c.assistants.update(a.assistant_id, { metadata: { b: 2 } });
    assert.equal(v2.version, 2);
    assert.deepEqual(v2.metadata, { team: "x", b: 2 });
    assert.equal(v2.name, "v");
    const v3 = await c.assistants.update(a.assistant_id, {});
    assert.equal(v3.version, 3, "an empty patch still makes a version");
    const v4 = await c.assistants.update(a.assistant_id, {
      config: { configurable: { k: 1 } },
      name: "renamed",
    });
    assert.equal(v4.version, 4);
    assert.equal((v4.config.configurable as any)?.k, 1);
    assert.equal(v4.name, "renamed");
    assert.deepEqual(v4.metadata, { team: "x", b: 2 });
    assert.equal((await c.assistants.get(a.assistant_id)).version, 4);

    const versions = await c.assistants.getVersions(a.assistant_id);
    assert.deepEqual(
      versions.map((v) => v.version),
      [4, 3, 2, 1],
    );
    assert.ok(versions.every((v) => v.assistant_id === a.assistant_id && v.graph_id === "agent"));
    assert.deepEqual(versions[3]!.metadata, { team: "x" });
    assert.deepEqual(
      (await c.assistants.getVersions(a.assistant_id, { limit: 1 })).map((v) => v.version),
      [4],
    );
    assert.deepEqual(
      (await c.assistants.getVersions(a.assistant_id, { offset: 2 })).map((v) => v.version),
      [2, 1],
    );
    assert.deepEqual(
      (await c.assistants.getVersions(a.assistant_id, { metadata: { b: 2 } })).map((v) => v.version),
      [4, 3, 2],
    );

    const latest = await c.assistants.setLatest(a.assistant_id, 1);
    assert.equal(latest.version, 1);
    assert.deepEqual(latest.metadata, { team: "x" });
    assert.equal(latest.name, "v");
    const got = await c.assistants.get(a.assistant_id);
    assert.equal(got.version, 1);
    assert.deepEqual(got.metadata, { team: "x" });
    const v5 = await c.assistants.update(a.assistant_id, {});
    assert.equal(v5.version, 5, "the next version is max + 1");

    assertDetail(
      await http(h.url, "POST", `/assistants/${a.assistant_id}/latest`, { version: 99 }),
      404,
      "latest of a missing version",
    );
    assertDetail(
      await http(h.url, "PATCH", `/assistants/${randomUUID()}`, { name: "x" }),
      404,
      "patch missing",
    );
    assertDetail(
      await http(h.url, "POST", `/assistants/${randomUUID()}/versions`, {}),
      404,
      "versions of a missing assistant",
    );
  });

  test("search by graph_id, name and metadata, with limit/offset/sort; count", T, async () => {
    const suite = randomUUID();
    // Created in the order c, a, b so that name order and creation order differ.
    const made: Record<string, string> = {};
    for (const [letter, graphId] of [
      ["c", "agent"],
      ["a", "slow"],
      ["b", "agent"],
    ] as const) {
      const a = await c.assistants.create({
        graphId,
        name: `${letter}-${suite}`,
        metadata: { suite, letter, nested: { deep: letter === "a" } },
      });
      made[letter] = a.assistant_id;
    }

    const all = await c.assistants.search({ metadata: { suite }, limit: 10 });
    assert.deepEqual(all.map((a) => a.assistant_id).sort(), Object.values(made).sort());

    const agentOnly = await c.assistants.search({ metadata: { suite }, graphId: "agent" });
    assert.deepEqual(agentOnly.map((a) => a.assistant_id).sort(), [made.b, made.c].sort());

    const byName = await c.assistants.search({ name: `a-${suite}` });
    assert.deepEqual(
      byName.map((a) => a.assistant_id),
      [made.a],
    );

    const byLetter = await c.assistants.search({ metadata: { suite, letter: "b" } });
    assert.deepEqual(
      byLetter.map((a) => a.assistant_id),
      [made.b],
    );
    const byNested = await c.assistants.search({ metadata: { nested: { deep: true }, suite } });
    assert.deepEqual(
      byNested.map((a) => a.assistant_id),
      [made.a],
      "metadata containment reaches nested objects",
    );

    const nameAsc = await c.assistants.search({ metadata: { suite }, sortBy: "name", sortOrder: "asc" });
    assert.deepEqual(
      nameAsc.map((a) => a.name),
      [`a-${suite}`, `b-${suite}`, `c-${suite}`],
    );
    const nameDesc = await c.assistants.search({ metadata: { suite }, sortBy: "name", sortOrder: "desc" });
    assert.deepEqual(
      nameDesc.map((a) => a.name),
      [`c-${suite}`, `b-${suite}`, `a-${suite}`],
    );
    const createdAsc = await c.assistants.search({
      metadata: { suite },
      sortBy: "created_at",
      sortOrder: "asc",
    });
    const times = createdAsc.map((a) => Date.parse(a.created_at));
    assert.deepEqual(
      times,
      [...times].sort((x, y) => x - y),
      "created_at ascending",
    );
    const createdDesc = await c.assistants.search({
      metadata: { suite },
      sortBy: "created_at",
      sortOrder: "desc",
    });
    const timesDesc = createdDesc.map((a) => Date.parse(a.created_at));
    assert.deepEqual(
      timesDesc,
      [...timesDesc].sort((x, y) => y - x),
      "created_at descending",
    );

    const page1 = await c.assistants.search({
      metadata: { suite },
      sortBy: "name",
      sortOrder: "asc",
      limit: 2,
    });
    const page2 = await c.assistants.search({
      metadata: { suite },
      sortBy: "name",
      sortOrder: "asc",
      limit: 2,
      offset: 2,
    });
    assert.deepEqual(
      page1.map((a) => a.name),
      [`a-${suite}`, `b-${suite}`],
    );
    assert.deepEqual(
      page2.map((a) => a.name),
      [`c-${suite}`],
    );

    assert.equal(await c.assistants.count({ metadata: { suite } }), 3);
    assert.equal(await c.assistants.count({ metadata: { suite }, graphId: "agent" }), 2);
    assert.equal(await c.assistants.count({ metadata: { suite }, graphId: "fail" }), 0);
    const rawCount = await http(h.url, "POST", "/assistants/count", { metadata: { suite } });
    assert.equal(rawCount.status, 200);
    assert.equal(rawCount.body, 3, "count answers a bare integer");
  });

  test("delete answers 200 with a JSON array, then the assistant is gone", T, async () => {
    const a = await c.assistants.create({ graphId: "agent" });
    const res = await http(h.url, "DELETE", `/assistants/${a.assistant_id}`);
    assert.equal(res.status, 200);
    assert.ok(Array.isArray(res.body), res.text);
    assert.ok(res.body.includes(a.assistant_id), res.text);
    assertDetail(await http(h.url, "GET", `/assistants/${a.assistant_id}`), 404, "get after delete");
    assertDetail(await http(h.url, "DELETE", `/assistants/${a.assistant_id}`), 404, "delete twice");
  });

  // The first answer reads the graph's TypeScript source (seconds, more on a loaded machine).
  test("schemas of agent: input/output/state/config JSON schemas with messages", {
    timeout: 120_000,
  }, async () => {
    const s = await c.assistants.getSchemas("agent");
    assert.equal(s.graph_id, "agent");
    for (const key of ["input_schema", "output_schema", "state_schema"] as const) {
      const schema = s[key] as any;
      assert.ok(schema && typeof schema === "object", `${key} present`);
      assert.ok(propertyNames(schema).includes("messages"), `${key} has messages: ${JSON.stringify(schema)}`);
    }
    assert.ok(s.config_schema && typeof s.config_schema === "object", "config_schema present");
    // The same through a specific assistant id.
    const again = await c.assistants.getSchemas(defaultAssistantId("agent"));
    assert.deepEqual(again.state_schema, s.state_schema);
  });

  test("schemas of custom_state: distinct input, output and state schemas", T, async () => {
    const s = await c.assistants.getSchemas("custom_state");
    assert.equal(s.graph_id, "custom_state");
    assert.deepEqual(propertyNames(s.input_schema), ["item"]);
    assert.deepEqual(propertyNames(s.output_schema), ["count", "items"]);
    assert.deepEqual(propertyNames(s.state_schema), ["count", "item", "items"]);
    const props = (s.state_schema as any).properties;
    assert.equal(props.count.type, "number");
    assert.equal(props.items.type, "array");
    assert.equal(props.item.type, "string");
    assert.ok(s.config_schema && typeof s.config_schema === "object", "config_schema present");
  });

  test("schemas of an unknown assistant → 404", T, async () => {
    assertDetail(await http(h.url, "GET", `/assistants/${randomUUID()}/schemas`), 404, "schemas");
    assertDetail(await http(h.url, "GET", `/assistants/${randomUUID()}/graph`), 404, "graph");
    assertDetail(await http(h.url, "GET", `/assistants/${randomUUID()}/subgraphs`), 404, "subgraphs");
  });

  test("graph: nodes and edges name the graph's nodes", T, async () => {
    const g = await c.assistants.getGraph("agent");
    const ids = g.nodes.map((n) => String(n.id));
    for (const id of ["__start__", "echo", "__end__"]) assert.ok(ids.includes(id), `node ${id} in ${ids}`);
    const edges = g.edges.map((e) => `${e.source}->${e.target}`);
    assert.ok(edges.includes("__start__->echo"), `edges ${edges}`);
    assert.ok(edges.includes("echo->__end__"), `edges ${edges}`);

    const ask = await c.assistants.getGraph("interrupt");
    assert.ok(ask.nodes.some((n) => n.id === "ask"));

    const parent = await c.assistants.getGraph("subgraph", { xray: true });
    assert.ok(
      parent.nodes.some((n) => String(n.id) === "child" || String(n.id).startsWith("child:")),
      JSON.stringify(parent.nodes),
    );
  });

  test("subgraphs of the subgraph graph list the child namespace; agent has none", T, async () => {
    const subs = await c.assistants.getSubgraphs("subgraph");
    assert.deepEqual(Object.keys(subs), ["child"]);
    const child = subs.child as any;
    // Guess: the SDK type names the keys state_schema/input_schema…; the JS server uses state/input….
    const state = child.state_schema ?? child.state;
    assert.ok(state && typeof state === "object", JSON.stringify(child));
    assert.ok(propertyNames(state).includes("messages"));
    const recursed = await c.assistants.getSubgraphs("subgraph", { recurse: true });
    assert.deepEqual(Object.keys(recursed), ["child"]);
    const byNs = await c.assistants.getSubgraphs("subgraph", { namespace: "child" });
    assert.deepEqual(Object.keys(byNs), ["child"]);
    assert.deepEqual(await c.assistants.getSubgraphs("agent"), {});
  });

  test("bad inputs are 422 validation errors naming the field", T, async () => {
    const id = defaultAssistantId("agent");
    const cases: [string, string, unknown, string][] = [
      ["POST", "/assistants/search", { limit: 0 }, "limit"],
      ["POST", "/assistants/search", { limit: 10001 }, "limit"],
      ["POST", "/assistants/search", { limit: "ten" }, "limit"],
      ["POST", "/assistants/search", { offset: -1 }, "offset"],
      ["POST", "/assistants/search", { sort_by: "color" }, "sort_by"],
      ["POST", "/assistants/search", { sort_order: "sideways" }, "sort_order"],
      ["POST", "/assistants/search", { graph_id: 5 }, "graph_id"],
      ["POST", "/assistants/search", { metadata: "x" }, "metadata"],
      ["POST", "/assistants/count", { metadata: 1 }, "metadata"],
      ["POST", "/assistants", {}, "graph_id"],
      ["POST", "/assistants", { graph_id: 7 }, "graph_id"],
      ["POST", "/assistants", { graph_id: "agent", if_exists: "maybe" }, "if_exists"],
      ["POST", "/assistants", { graph_id: "agent", assistant_id: "not-a-uuid" }, "assistant_id"],
      ["POST", "/assistants", { graph_id: "agent", config: "x" }, "config"],
      ["POST", "/assistants", { graph_id: "agent", metadata: [] }, "metadata"],
      ["POST", "/assistants", { graph_id: "agent", name: 3 }, "name"],
      ["PATCH", `/assistants/${id}`, { metadata: 5 }, "metadata"],
      ["POST", `/assistants/${id}/versions`, { limit: 0 }, "limit"],
      ["POST", `/assistants/${id}/latest`, { version: "x" }, "version"],
      ["POST", `/assistants/${id}/latest`, {}, "version"],
    ];
    const before = await c.assistants.count();
    await checkAll(
      cases.map(([method, path, body, field]) => [
        `${method} ${path} ${JSON.stringify(body)}`,
        async () => assertValidation(await http(h.url, method, path, body), field),
      ]),
    );
    assert.equal(await c.assistants.count(), before, "no refused create created anything");
    // A bad query parameter (on an existing assistant, which must survive the refused call).
    const victim = await c.assistants.create({ graphId: "agent" });
    assertValidation(
      await http(h.url, "DELETE", `/assistants/${victim.assistant_id}?delete_threads=perhaps`),
      "delete_threads",
      "delete_threads=perhaps",
    );
    assert.equal((await c.assistants.get(victim.assistant_id)).assistant_id, victim.assistant_id);
  });

  test("search limit at the edges that are valid", T, async () => {
    const one = await c.assistants.search({ limit: 1 });
    assert.equal(one.length, 1);
    const many = await http(h.url, "POST", "/assistants/search", { limit: 1000 });
    assert.equal(many.status, 200);
    assert.ok(Array.isArray(many.body));
  });
});
