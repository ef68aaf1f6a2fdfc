import path from "node:path";
import { fileURLToPath } from "node:url";
import { SignJWT } from "jose";
import { startHangar } from "../test/helpers/server.js";
import { startReference } from "./reference-server.js";

const BENCH = path.dirname(fileURLToPath(import.meta.url));
const CONFIG = path.join(BENCH, "..", "test", "e2e", "fixtures", "auth", "langgraph.json");
const SECRET = new TextEncoder().encode("test-secret-of-the-auth-suite");

/** Where Hangar answers otherwise on purpose (README, "Custom authentication": where the JS reference server differs). */
const CHOSEN: Record<string, string> = {
  "bob GET /threads/<id>/runs/<id>/stream": "a foreign run's join stream is a 404 before the stream starts",
  "handler throws an Error": "an authenticate handler failing with a plain Error is a 401, not a 500",
  "  → bob reads it":
    "a store handler's reassigned namespace is honoured (the reference applies only in-place edits, so there alice's item landed in the shared namespace)",
};

type Row = { label: string; status: number | string; body: string };

async function requests(base: string): Promise<Row[]> {
  const token = (sub: string, permissions: string[] = []) =>
    new SignJWT({ permissions }).setProtectedHeader({ alg: "HS256" }).setSubject(sub).sign(SECRET);
  const tokens: Record<string, string> = {
    alice: await token("alice", ["delete"]),
    bob: await token("bob"),
    carol: await token("carol", ["delete"]),
  };
  const rows: Row[] = [];
  const note = (label: string, value: unknown) =>
    rows.push({ label: `  → ${label}`, status: String(value), body: "" });
  const call = async (who: string | null, method: string, url: string, body?: unknown, label?: string) => {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (who) headers.authorization = `Bearer ${tokens[who] ?? who}`;
    const res = await fetch(base + url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    const masked = url.replace(/[0-9a-f-]{36}/g, "<id>");
    rows.push({
      label: label ?? `${who ?? "anon"} ${method} ${masked}`,
      status: res.status,
      body: text.slice(0, 80),
    });
    try {
      return JSON.parse(text);
    } catch {
      return undefined;
    }
  };

  await call(null, "POST", "/threads/search", {});
  await call(null, "GET", "/info");
  const thread = await call("alice", "POST", "/threads", { metadata: { k: 1 } }, "alice creates a thread");
  note("owner stamped", thread?.metadata?.owner);
  const id = thread.thread_id;
  for (const [who, method, url, body] of [
    ["bob", "GET", `/threads/${id}`],
    ["bob", "PATCH", `/threads/${id}`, { metadata: { x: 1 } }],
    ["bob", "DELETE", `/threads/${id}`],
    ["carol", "DELETE", `/threads/${id}`],
    ["bob", "POST", `/threads/${id}/copy`, {}],
    ["bob", "POST", "/threads", { thread_id: id, if_exists: "do_nothing" }],
    ["bob", "GET", `/threads/${id}/state`],
    ["bob", "POST", `/threads/${id}/state`, { values: {} }],
    ["bob", "POST", `/threads/${id}/history`, {}],
  ] as const)
    await call(who, method, url, body);
  note("threads bob sees", (await call("bob", "POST", "/threads/search", {}))?.length);
  note("threads bob counts", await call("bob", "POST", "/threads/count", {}));
  const out = await call("alice", "POST", `/threads/${id}/runs/wait`, {
    assistant_id: "whoami",
    input: { input: "x" },
  });
  note("the graph sees", `${out?.user_id} ${JSON.stringify(out?.permissions)}`);
  const runs = await call("alice", "GET", `/threads/${id}/runs`);
  note("run metadata owner", runs?.[0]?.metadata?.owner);
  const runId = runs?.[0]?.run_id;
  for (const [who, method, url, body] of [
    ["bob", "POST", `/threads/${id}/runs`, { assistant_id: "whoami" }],
    ["bob", "POST", `/threads/${id}/runs`, { assistant_id: "whoami", if_not_exists: "create" }],
    ["bob", "GET", `/threads/${id}/runs`],
    ["bob", "GET", `/threads/${id}/runs/${runId}`],
    ["bob", "GET", `/threads/${id}/runs/${runId}/join`],
    ["bob", "GET", `/threads/${id}/runs/${runId}/stream`],
    ["bob", "POST", `/threads/${id}/runs/${runId}/cancel`],
    ["bob", "DELETE", `/threads/${id}/runs/${runId}`],
    ["carol", "DELETE", `/threads/${id}/runs/${runId}`],
  ] as const)
    await call(who, method, url, body);
  const assistant = await call(
    "alice",
    "POST",
    "/assistants",
    { graph_id: "whoami" },
    "alice creates an assistant",
  );
  note("owner stamped", assistant?.metadata?.owner);
  const aid = assistant.assistant_id;
  for (const [who, method, url, body] of [
    ["bob", "GET", `/assistants/${aid}`],
    ["bob", "PATCH", `/assistants/${aid}`, { name: "x" }],
    ["carol", "DELETE", `/assistants/${aid}`],
    ["bob", "POST", `/assistants/${aid}/versions`, {}],
  ] as const)
    await call(who, method, url, body);
  note("assistants bob sees", (await call("bob", "POST", "/assistants/search", {}))?.length);
  await call("alice", "PUT", "/store/items", { namespace: ["n"], key: "k", value: { v: 1 } });
  note("alice reads her item", (await call("alice", "GET", "/store/items?namespace=n&key=k"))?.value?.v);
  note("bob reads it", JSON.stringify(await call("bob", "GET", "/store/items?namespace=n&key=k")));
  await call(null, "POST", "/threads", {}, "no token");
  await call("crash", "POST", "/threads", {}, "handler throws an Error");
  return rows;
}

const reference = await startReference({ config: CONFIG });
const hangar = await startHangar({ config: CONFIG });
try {
  const [ref, ours] = [await requests(reference.url), await requests(hangar.url)];
  let unexpected = 0;
  for (const [i, r] of ref.entries()) {
    const h = ours[i]!;
    const same = String(r.status) === String(h.status);
    const why = same ? "" : CHOSEN[r.label] ? `chosen: ${CHOSEN[r.label]}` : "UNEXPECTED";
    if (why === "UNEXPECTED") unexpected++;
    console.log(
      `${same ? " " : "≠"} ${r.label.padEnd(46)} reference ${String(r.status).padEnd(7)} hangar ${String(h.status).padEnd(7)} ${why}`,
    );
  }
  console.log(unexpected ? `${unexpected} unexpected difference(s)` : "no unexpected difference");
  process.exitCode = unexpected ? 1 : 0;
} finally {
  await reference.stop();
  await hangar.stop();
}
