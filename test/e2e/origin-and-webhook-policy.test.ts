/**
 * Operator patterns and secrets that a tenant must not get around (issue 32, items 10 and 13):
 * `http.cors.allow_origin_regex` matches the whole origin (the official server's fullmatch), and
 * `webhooks.headers` go only to URLs a `webhooks.url.allowed_domains` policy admits (or this server's own
 * paths); no webhook delivery follows a redirect, with or without a policy.
 */
import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import {
  exampleGraph,
  type Hangar,
  http,
  human,
  rejection,
  startHangar,
  waitFor,
  writeProject,
} from "../helpers/server.js";

const T = { timeout: 60_000 };

const projectWith = (extra: Record<string, unknown>) =>
  writeProject({ graphs: { agent: exampleGraph("chat.ts") }, ...extra });

const preflight = (url: string, origin: string) =>
  fetch(`${url}/assistants/search`, {
    method: "OPTIONS",
    headers: { Origin: origin, "Access-Control-Request-Method": "POST" },
  });

describe("http.cors.allow_origin_regex matches the whole origin", () => {
  let h: Hangar;
  before(async () => {
    const cors = { allow_origin_regex: "https://app\\.example\\.com", allow_credentials: true };
    h = await startHangar({ command: "serve", config: await projectWith({ http: { cors } }) });
  });
  after(async () => {
    await h?.stop();
  });

  test("the origin itself is allowed; longer origins that contain it are not", T, async () => {
    const ok = await preflight(h.url, "https://app.example.com");
    assert.equal(ok.headers.get("access-control-allow-origin"), "https://app.example.com");
    assert.equal(ok.headers.get("access-control-allow-credentials"), "true");
    for (const origin of [
      "https://app.example.com.evil.net",
      "https://evil.net/https://app.example.com",
      "http://xhttps://app.example.com",
    ]) {
      const res = await preflight(h.url, origin);
      assert.equal(res.headers.get("access-control-allow-origin"), null, origin);
      const get = await fetch(`${h.url}/ok`, { headers: { Origin: origin } });
      assert.equal(get.headers.get("access-control-allow-origin"), null, origin);
    }
  });

  test("a pattern that is no regular expression stops the start-up, naming the setting", T, async () => {
    const config = await projectWith({ http: { cors: { allow_origin_regex: "https://(" } } });
    const err = await rejection(startHangar({ config, startTimeoutMs: 20_000 }));
    assert.match(err.message, /exited \(code [1-9]/, err.message);
    assert.match(err.message, /http\.cors\.allow_origin_regex: must be a valid regular expression/);
  });
});

interface Delivery {
  path: string;
  headers: IncomingHttpHeaders;
}

/** A receiver on 127.0.0.1: `/redirect` answers 307 to `/landed` (so a followed redirect shows). */
async function receiver(): Promise<{ server: Server; port: number; got: Delivery[] }> {
  const got: Delivery[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      got.push({ path: req.url ?? "", headers: req.headers });
      if (req.url?.startsWith("/redirect")) res.writeHead(307, { location: "/landed" }).end();
      else res.writeHead(200).end("{}");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return { server, port: (server.address() as AddressInfo).port, got };
}

/** Runs a run with `webhook` and waits for the receiver to hear about it. */
async function deliver(h: Hangar, got: Delivery[], webhook: string): Promise<Delivery> {
  const before = got.length;
  const res = await http(h.url, "POST", "/runs/wait", { assistant_id: "agent", input: human("hi"), webhook });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return waitFor(() => got[before], { timeoutMs: 10_000, what: `the delivery to ${webhook}` });
}

describe("webhooks.headers without an allowed_domains policy", () => {
  let h: Hangar;
  let hooks: Awaited<ReturnType<typeof receiver>>;
  before(async () => {
    hooks = await receiver();
    const config = await projectWith({ webhooks: { headers: { Authorization: "Bearer operator-secret" } } });
    h = await startHangar({ config });
  });
  after(async () => {
    await h?.stop();
    await new Promise<void>((r) => hooks?.server.close(() => r()));
  });

  test("a URL the tenant names gets the delivery without the operator's headers", T, async () => {
    const hit = await deliver(h, hooks.got, `http://127.0.0.1:${hooks.port}/hook`);
    assert.equal(hit.path, "/hook");
    assert.equal(hit.headers.authorization, undefined);
    assert.match(h.logs(), /webhooks\.headers are sent only to hosts in webhooks\.url\.allowed_domains/);
  });

  test("a redirect is not followed", T, async () => {
    await deliver(h, hooks.got, `http://127.0.0.1:${hooks.port}/redirect`);
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(
      hooks.got.filter((d) => d.path === "/landed"),
      [],
    );
  });
});

describe("webhooks.headers with an allowed_domains policy", () => {
  let h: Hangar;
  let hooks: Awaited<ReturnType<typeof receiver>>;
  before(async () => {
    hooks = await receiver();
    const config = await projectWith({
      webhooks: {
        headers: { Authorization: "Bearer operator-secret" },
        url: { require_https: false, allowed_domains: ["127.0.0.1"] },
      },
    });
    h = await startHangar({ config });
  });
  after(async () => {
    await h?.stop();
    await new Promise<void>((r) => hooks?.server.close(() => r()));
  });

  test("a host the policy admits gets the headers; a redirect from it is not followed", T, async () => {
    const hit = await deliver(h, hooks.got, `http://127.0.0.1:${hooks.port}/hook`);
    assert.equal(hit.headers.authorization, "Bearer operator-secret");
    await deliver(h, hooks.got, `http://127.0.0.1:${hooks.port}/redirect`);
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(
      hooks.got.filter((d) => d.path === "/landed"),
      [],
    );
    assert.doesNotMatch(h.logs(), /webhooks\.headers are sent only/);
  });
});
