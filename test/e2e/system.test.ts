import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";
import { assertDetail, assertValidation, type Hangar, http, startHangar } from "../helpers/server.js";

const T = { timeout: 30_000 };

describe("system routes", () => {
  let h: Hangar;
  before(async () => {
    h = await startHangar();
  });
  after(async () => {
    await h?.stop();
  });

  test("GET /ok answers {ok: true}", T, async () => {
    const res = await http(h.url, "GET", "/ok");
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /application\/json/);
    assert.deepEqual(res.body, { ok: true });
  });

  test("GET /info has a version and flags", T, async () => {
    const res = await http(h.url, "GET", "/info");
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /application\/json/);
    assert.equal(typeof res.body.version, "string");
    assert.ok(res.body.version.length > 0);
    assert.equal(typeof res.body.flags, "object");
    assert.ok(res.body.flags !== null && !Array.isArray(res.body.flags));
    // Assistants are always on in Hangar (nothing is gated).
    assert.equal(res.body.flags.assistants, true);
  });

  test("an upgrade by any method but GET is a 405 naming it, not a GET of its path", T, async () => {
    const { hostname, port } = new URL(h.url);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => {
        socket.write(
          "POST /threads/search HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
            "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
        );
      });
      let text = "";
      socket.setEncoding("utf8").on("data", (chunk: string) => {
        text += chunk;
      });
      socket.on("end", () => resolve(text)).on("error", reject);
    });
    assert.match(raw, /^HTTP\/1\.1 405 /);
    assert.match(raw, /\r\nallow: GET\r\n/);
    assert.deepEqual(JSON.parse(raw.slice(raw.indexOf("\r\n\r\n") + 4)), {
      detail: "Only GET requests can be upgraded, got POST",
    });
  });

  test("an unknown route is a 404 with a JSON detail", T, async () => {
    assertDetail(await http(h.url, "GET", "/no/such/route"), 404, "GET /no/such/route");
    assertDetail(await http(h.url, "POST", "/nope", {}), 404, "POST /nope");
    assertDetail(
      await http(h.url, "GET", `/threads/${randomUUID()}/nothing-here`),
      404,
      "GET /threads/x/nothing-here",
    );
  });

  test("malformed JSON is a 422 validation error, never a 500", T, async () => {
    for (const [path, body] of [
      ["/threads", "{"],
      ["/threads/search", '{"limit": 1,'],
      ["/assistants", "{graph_id: agent}"],
      ["/assistants/search", "not json at all"],
      ["/runs/wait", '{"assistant_id": "agent", "input": '],
    ] as const) {
      const res = await http(h.url, "POST", path, body, { "content-type": "application/json" });
      assertValidation(res, undefined, `POST ${path} ${body}`);
    }
  });

  test("a JSON body that is not an object is a 422", T, async () => {
    for (const body of ["[]", "42", '"text"']) {
      const res = await http(h.url, "POST", "/threads", body, { "content-type": "application/json" });
      assertValidation(res, undefined, `POST /threads ${body}`);
    }
  });

  test("POST /threads with no body at all creates a thread (as the reference does)", T, async () => {
    const res = await fetch(`${h.url}/threads`, { method: "POST" });
    assert.equal(res.status, 200);
    const thread = (await res.json()) as { thread_id: string; status: string };
    assert.equal(thread.status, "idle");
  });

  test("CORS preflight is answered with the allowed origin, methods and headers", T, async () => {
    const res = await fetch(`${h.url}/threads`, {
      method: "OPTIONS",
      headers: {
        Origin: "http://example.com",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type,x-api-key",
      },
    });
    assert.ok(res.status === 204 || res.status === 200, `preflight status ${res.status}`);
    const origin = res.headers.get("access-control-allow-origin");
    assert.ok(origin === "*" || origin === "http://example.com", `allow-origin ${origin}`);
    const methods = (res.headers.get("access-control-allow-methods") ?? "").toUpperCase();
    assert.ok(methods === "*" || methods.split(/\s*,\s*/).includes("POST"), `allow-methods ${methods}`);
    const allowHeaders = (res.headers.get("access-control-allow-headers") ?? "").toLowerCase();
    assert.ok(
      allowHeaders === "*" || allowHeaders.split(/\s*,\s*/).includes("content-type"),
      `allow-headers ${allowHeaders}`,
    );
  });

  test("CORS on a real request exposes Content-Location and X-Pagination-Total", T, async () => {
    const res = await fetch(`${h.url}/threads/search`, {
      method: "POST",
      headers: { Origin: "http://example.com", "content-type": "application/json" },
      body: "{}",
    });
    assert.equal(res.status, 200);
    const origin = res.headers.get("access-control-allow-origin");
    assert.ok(origin === "*" || origin === "http://example.com", `allow-origin ${origin}`);
    const exposed = (res.headers.get("access-control-expose-headers") ?? "").toLowerCase().split(/\s*,\s*/);
    assert.ok(exposed.includes("content-location"), `expose-headers ${exposed}`);
    assert.ok(exposed.includes("x-pagination-total"), `expose-headers ${exposed}`);
  });
});
