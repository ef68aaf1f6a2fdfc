/**
 * The CORS middleware (src/http/app.ts) sets its headers on the handler's response once there is one:
 * on every kind of answer, also one whose headers cannot change (Response.redirect, a fetched response).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Hono } from "hono";
import { corsMiddleware } from "../../src/http/app.js";

const app = new Hono()
  .use(corsMiddleware({ allow_origins: ["http://allowed.test"] }))
  .get("/json", (c) => {
    c.header("x-route", "kept");
    return c.json({ a: 1 });
  })
  .get("/redirect", () => Response.redirect("http://127.0.0.1/elsewhere", 302))
  .get("/throw", () => {
    throw new Error("boom");
  });
app.onError((_err, c) => c.json({ detail: "failed" }, 500));

const origin = { origin: "http://allowed.test" };

test("answers of every kind carry the CORS headers, and keep their own", async () => {
  for (const [path, status] of [
    ["/json", 200],
    ["/redirect", 302],
    ["/throw", 500],
    ["/missing", 404],
  ] as const) {
    const res = await app.request(path, { headers: origin });
    assert.equal(res.status, status, path);
    assert.equal(res.headers.get("access-control-allow-origin"), "http://allowed.test", path);
    assert.match(res.headers.get("access-control-expose-headers") ?? "", /content-location/, path);
    assert.match(res.headers.get("vary") ?? "", /origin/i, path);
  }
  const json = await app.request("/json", { headers: origin });
  assert.equal(json.headers.get("x-route"), "kept");
  assert.deepEqual(await json.json(), { a: 1 });
  const redirect = await app.request("/redirect", { headers: origin });
  assert.equal(redirect.headers.get("location"), "http://127.0.0.1/elsewhere");
});

test("an origin not allowed gets no allow-origin header; a preflight is answered", async () => {
  const other = await app.request("/json", { headers: { origin: "http://other.test" } });
  assert.equal(other.status, 200);
  assert.equal(other.headers.get("access-control-allow-origin"), null);
  const preflight = await app.request("/json", {
    method: "OPTIONS",
    headers: { ...origin, "access-control-request-method": "POST" },
  });
  assert.equal(preflight.status, 204);
  assert.equal(preflight.headers.get("access-control-allow-origin"), "http://allowed.test");
  assert.match(preflight.headers.get("access-control-allow-methods") ?? "", /POST/);
});
