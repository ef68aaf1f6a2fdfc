/**
 * LangGraph Studio against `hangar dev` (issue 17, point 8): Studio is a page on https://smith.langchain.com
 * calling the server on loopback, so it needs CORS for its headers and, in Chromium, the Private Network
 * Access preflight answered; the start-up banner prints its link as `langgraph dev` does. Checked with
 * raw HTTP (exact headers) and in Debian's Chromium, from a page served as https://smith.langchain.com.
 *
 * Chromium since 142 no longer sends PNA preflights: Local Network Access asks the user instead (the
 * browser test grants it, and checks that without it the page cannot reach the server, so the page
 * really is a public one calling loopback). The PNA answer is for the Chromium versions that preflight.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import type { Browser } from "playwright-core";
import { CHROMIUM, launchChromium } from "../helpers/browser.js";
import { exampleGraph, type Hangar, http, startHangar, waitFor, writeProject } from "../helpers/server.js";

const T = { timeout: 60_000 };
const STUDIO = "https://smith.langchain.com";
/** What Studio's SDK client sends besides the body: its key, Studio's auth scheme, resumption. */
const STUDIO_HEADERS = "content-type,x-api-key,x-auth-scheme,x-tenant-id,last-event-id";

/** A PNA preflight as Chromium sends it before a public page calls a loopback server. */
function preflight(url: string, path: string, origin = STUDIO, extra: Record<string, string> = {}) {
  return fetch(`${url}${path}`, {
    method: "OPTIONS",
    headers: {
      Origin: origin,
      "Access-Control-Request-Method": "POST",
      "Access-Control-Request-Headers": STUDIO_HEADERS,
      "Access-Control-Request-Private-Network": "true",
      ...extra,
    },
  });
}

/** A langgraph.json with one example graph (absolute path) and the given `http` section. */
const projectWith = (httpSection: Record<string, unknown> | undefined) =>
  writeProject({ graphs: { agent: exampleGraph("chat.ts") }, ...(httpSection ? { http: httpSection } : {}) });

describe("Studio and hangar dev", () => {
  let h: Hangar;
  before(async () => {
    h = await startHangar();
  });
  after(async () => {
    await h?.stop();
  });

  test("the banner prints Studio's link as langgraph dev does, with the API and its docs", T, async () => {
    const logs = await waitFor(() => (h.logs().includes("Studio ") ? h.logs() : null), { what: "banner" });
    const lines = logs.split("\n").map((l) => l.trim());
    assert.ok(lines.includes(`Studio     ${STUDIO}/studio?baseUrl=${h.url}`), logs);
    assert.ok(lines.includes(`API        ${h.url}`), logs);
    assert.ok(lines.includes(`API docs   ${h.url}/docs`), logs);
  });

  test("the Private Network Access preflight from Studio is answered, with Studio's headers", T, async () => {
    const res = await preflight(h.url, "/assistants/search");
    assert.equal(res.status, 204);
    assert.equal(res.headers.get("access-control-allow-private-network"), "true");
    assert.equal(res.headers.get("access-control-allow-origin"), "*");
    assert.equal(res.headers.get("access-control-allow-headers"), STUDIO_HEADERS);
    assert.ok((res.headers.get("access-control-allow-methods") ?? "").split(",").includes("POST"));
  });

  test("a preflight that does not ask for private network access gets no such header", T, async () => {
    const res = await fetch(`${h.url}/info`, {
      method: "OPTIONS",
      headers: { Origin: STUDIO, "Access-Control-Request-Method": "GET" },
    });
    assert.equal(res.status, 204);
    assert.equal(res.headers.get("access-control-allow-private-network"), null);
  });

  test("Studio's real requests get CORS headers (GET /info, a search with its auth scheme)", T, async () => {
    const info = await http(h.url, "GET", "/info", undefined, { Origin: STUDIO });
    assert.equal(info.status, 200);
    assert.equal(info.headers.get("access-control-allow-origin"), "*");
    const search = await http(
      h.url,
      "POST",
      "/assistants/search",
      { limit: 10 },
      { Origin: STUDIO, "x-auth-scheme": "langsmith" },
    );
    assert.equal(search.status, 200);
    assert.equal(search.headers.get("access-control-allow-origin"), "*");
    assert.ok(search.body.some((a: { graph_id: string }) => a.graph_id === "agent"));
    const exposed = (search.headers.get("access-control-expose-headers") ?? "").split(",");
    assert.ok(exposed.includes("x-pagination-total"), `expose-headers ${exposed}`);
  });

  test("in Chromium, a page served as https://smith.langchain.com reads the server on loopback", {
    ...T,
    skip: existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is missing`,
  }, async () => {
    let browser: Browser | undefined;
    try {
      browser = await launchChromium();
      // Chromium asks the user before a public page reaches the local network; Studio's users say yes.
      const context = await browser.newContext({ permissions: ["local-network-access"] });
      const page = await context.newPage();
      // The page is Studio's origin, served here: nothing leaves this machine.
      await page.route(`${STUDIO}/**`, (route) =>
        route.fulfill({
          status: 200,
          contentType: "text/html",
          body: "<!doctype html><title>Studio</title>",
        }),
      );
      await page.goto(`${STUDIO}/studio?baseUrl=${h.url}`);
      const result = await page.evaluate(async (base) => {
        const info = await fetch(`${base}/info`).then((r) => r.json());
        const search = await fetch(`${base}/assistants/search`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-auth-scheme": "langsmith" },
          body: JSON.stringify({ limit: 10 }),
        });
        return {
          server: info.server,
          status: search.status,
          total: search.headers.get("x-pagination-total"),
          graphs: ((await search.json()) as { graph_id: string }[]).map((a) => a.graph_id),
        };
      }, h.url);
      assert.equal(result.server, "hangar");
      assert.equal(result.status, 200);
      assert.ok(Number(result.total) > 0, `X-Pagination-Total readable: ${result.total}`);
      assert.ok(result.graphs.includes("agent"), JSON.stringify(result.graphs));

      // Without the user's permission the same page cannot reach loopback at all.
      const denied = await (await browser.newContext()).newPage();
      await denied.route(`${STUDIO}/**`, (route) =>
        route.fulfill({
          status: 200,
          contentType: "text/html",
          body: "<!doctype html><title>Studio</title>",
        }),
      );
      await denied.goto(`${STUDIO}/studio?baseUrl=${h.url}`);
      const refused = await Promise.race([
        denied.evaluate(
          (base) =>
            fetch(`${base}/info`).then(
              (r) => `answered ${r.status}`,
              (e: Error) => `refused: ${e.message}`,
            ),
          h.url,
        ),
        new Promise<string>((resolve) => setTimeout(() => resolve("refused: no answer (a prompt)"), 10_000)),
      ]);
      assert.match(refused, /^refused/);
    } finally {
      await browser?.close();
    }
  });
});

describe("Studio and hangar serve", () => {
  let plain: Hangar;
  let configured: Hangar;
  before(async () => {
    plain = await startHangar({ command: "serve", config: await projectWith(undefined) });
    configured = await startHangar({
      command: "serve",
      config: await projectWith({ cors: { allow_origins: [STUDIO] } }),
    });
  });
  after(async () => {
    await plain?.stop();
    await configured?.stop();
  });

  test("no Studio banner", T, async () => {
    assert.doesNotMatch(plain.logs(), /smith\.langchain\.com/);
  });

  test("with the default CORS, CORS is answered but private network access is not", T, async () => {
    const res = await preflight(plain.url, "/assistants/search");
    assert.equal(res.status, 204);
    assert.equal(res.headers.get("access-control-allow-origin"), "*");
    assert.equal(res.headers.get("access-control-allow-private-network"), null);
  });

  test("with http.cors naming Studio, it is answered for Studio and for no other origin", T, async () => {
    const studio = await preflight(configured.url, "/assistants/search");
    assert.equal(studio.headers.get("access-control-allow-origin"), STUDIO);
    assert.equal(studio.headers.get("access-control-allow-private-network"), "true");
    const other = await preflight(configured.url, "/assistants/search", "https://evil.example");
    assert.equal(other.headers.get("access-control-allow-origin"), null);
    assert.equal(other.headers.get("access-control-allow-private-network"), null);
  });
});
