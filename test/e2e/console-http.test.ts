/**
 * The console's routes over raw HTTP: the page and its assets (statuses, content types, caching,
 * CSP), public like /docs while the API needs a key; 404 for an unknown asset; the WebSocket
 * credentials the terminal sends as subprotocols; the routes in /openapi.json.
 */
import assert from "node:assert/strict";
import { request } from "node:http";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { WebSocket } from "ws";
import { launchChromium } from "../helpers/browser.js";
import { type Hangar, http, REPO_ROOT, startHangar } from "../helpers/server.js";
import { CONSOLE_FIXTURE } from "./console-page.js";

const KEY = "console-http-key";
const T = { timeout: 60_000 };

describe("console: HTTP", () => {
  let h: Hangar;
  let page: string;

  before(async () => {
    h = await startHangar({ config: CONSOLE_FIXTURE, env: { HANGAR_API_KEYS: `${KEY}:http-org` } });
  });
  after(async () => {
    await h?.stop();
  });

  test("GET /console: the page, public, naming its hashed assets by relative URLs", T, async () => {
    const res = await http(h.url, "GET", "/console");
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "text/html; charset=UTF-8");
    assert.equal(res.headers.get("cache-control"), "no-cache");
    assert.equal(res.headers.get("x-content-type-options"), "nosniff");
    const csp = res.headers.get("content-security-policy") ?? "";
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    page = res.text;
    assert.match(page, /<script type="module" src="console\/assets\/main-[A-Z0-9]+\.js"><\/script>/);
    assert.match(page, /<link rel="stylesheet" href="console\/assets\/main-[A-Z0-9]+\.css">/);
    assert.doesNotMatch(
      page,
      /https?:\/\//,
      "no absolute URL: nothing from elsewhere, and a mount prefix works",
    );
    // The API itself still needs the key.
    assert.equal((await http(h.url, "POST", "/threads/search", {})).status, 401);
    // HEAD too (a link checker's request).
    assert.equal((await fetch(`${h.url}/console`, { method: "HEAD" })).status, 200);
  });

  test("its assets: JavaScript and CSS, cached for good, public", T, async () => {
    const assets = [...page.matchAll(/(?:src|href)="(console\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    assert.equal(assets.length, 2);
    for (const asset of assets) {
      const res = await http(h.url, "GET", `/${asset}`);
      assert.equal(res.status, 200, asset);
      assert.equal(
        res.headers.get("content-type"),
        asset.endsWith(".js") ? "text/javascript; charset=utf-8" : "text/css; charset=utf-8",
      );
      assert.equal(res.headers.get("cache-control"), "public, max-age=31536000, immutable");
      assert.equal(res.headers.get("x-content-type-options"), "nosniff");
    }
    const entry = `/${assets.find((a) => a.endsWith(".js"))}`;
    const script = (await http(h.url, "GET", entry)).text;
    // Gzipped for a browser that takes it, as is otherwise; the same bytes either way.
    const zipped = await fetch(`${h.url}${entry}`, { headers: { "accept-encoding": "gzip" } });
    assert.equal(zipped.headers.get("content-encoding"), "gzip");
    assert.equal(zipped.headers.get("vary"), "Accept-Encoding");
    assert.equal(await zipped.text(), script);
    const plain = await fetch(`${h.url}${entry}`, { headers: { "accept-encoding": "identity" } });
    assert.equal(plain.headers.get("content-encoding"), null);
    assert.equal(await plain.text(), script);
    // The lazily loaded chunks (terminal, graph view) are served too.
    const chunks = [...script.matchAll(/"\.\/(chunk-[A-Z0-9]+\.js)"/g)].map((m) => m[1]!);
    assert.ok(chunks.length >= 2, `the entry imports chunks: ${chunks}`);
    for (const chunk of new Set(chunks)) {
      const res = await http(h.url, "GET", `/console/assets/${chunk}`);
      assert.equal(res.status, 200, chunk);
      assert.equal(res.headers.get("content-type"), "text/javascript; charset=utf-8");
    }
    // No script loads anything from another origin (no CDN, no font service).
    for (const url of script.matchAll(/import\(["'](https?:[^"']+)["']\)/g)) assert.fail(`imports ${url[1]}`);
  });

  test("an unknown asset is a JSON 404; /console/ redirects to /console", T, async () => {
    for (const path of [
      "/console/assets/nope.js",
      "/console/assets/main.js",
      "/console/assets/..%2F..%2Fpackage.json",
      "/console/assets/%00",
    ]) {
      const res = await http(h.url, "GET", path);
      assert.ok(res.status === 404 || res.status === 422, `${path}: ${res.status}`);
      assert.equal(typeof res.body?.detail === "string" || Array.isArray(res.body?.detail), true, path);
    }
    const missing = await http(h.url, "GET", "/console/assets/nope.js");
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.body, { detail: "No such console asset: nope.js" });
    assert.equal((await http(h.url, "GET", "/console/nope")).status, 404);
    const redirect = await fetch(`${h.url}/console/`, { redirect: "manual" });
    assert.equal(redirect.status, 301);
    assert.equal(redirect.headers.get("location"), "../console");
  });

  test("the terminal's WebSocket credentials: a key sent as a subprotocol authenticates", T, async () => {
    const upgrade = (protocols: string[]) =>
      new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(
          `${h.url.replace(/^http/, "ws")}/v2/sandboxes/dataplane/00000000-0000-0000-0000-000000000000/execute/ws`,
          protocols,
        );
        ws.on("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
        ws.on("open", () => reject(new Error("opened a socket to a sandbox that does not exist")));
        ws.on("error", () => {});
      });
    const b64 = (text: string) => Buffer.from(text).toString("base64url");
    // Without it: 401. With the key: authenticated, and the sandbox is simply not found.
    assert.equal(await upgrade(["hangar.console"]), 401);
    assert.equal(await upgrade(["hangar.console", `hangar.key.${b64("wrong")}`]), 401);
    assert.equal(await upgrade(["hangar.console", `hangar.key.${b64(KEY)}`]), 404);
    // A value that is no header value is dropped: refused, never a 500.
    assert.equal(await upgrade(["hangar.console", `hangar.key.${b64("a\nb")}`]), 401);
    assert.equal(await upgrade(["hangar.console", `hangar.authorization.${b64("Bearer x\r\ny")}`]), 401);
    assert.equal(await upgrade(["hangar.console", "hangar.key.%%%"]), 401);
    // Only the terminal's upgrade reads them: an ordinary request with the same headers is refused.
    const plain = await new Promise<number>((resolve, reject) => {
      const url = new URL(`${h.url}/threads/search`);
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: "POST",
          headers: {
            upgrade: "websocket",
            "sec-websocket-protocol": `hangar.key.${b64(KEY)}`,
            "content-type": "application/json",
          },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on("error", reject);
      req.end("{}");
    });
    assert.equal(plain, 401);
  });

  test("/openapi.json documents the console's routes as public", T, async () => {
    const doc = (await http(h.url, "GET", "/openapi.json")).body;
    for (const path of ["/console", "/console/assets/{file}"]) {
      assert.ok(doc.paths[path]?.get, path);
      assert.deepEqual(doc.paths[path].get.security, [], `${path} is public`);
    }
  });
});

describe("console: under http.mount_prefix", () => {
  test("the page, its assets and the API it calls are all under the prefix", T, async () => {
    const h = await startHangar({
      config: join(REPO_ROOT, "test", "e2e", "fixtures", "console", "mount-prefix.json"),
    });
    const browser = await launchChromium();
    try {
      const base = `${h.url}/agents/api`;
      assert.equal((await http(h.url, "GET", "/console")).status, 404);
      const page = await http(base, "GET", "/console");
      assert.equal(page.status, 200);
      const script = /src="(console\/assets\/[^"]+)"/.exec(page.text)![1]!;
      assert.equal((await http(base, "GET", `/${script}`)).status, 200);
      // In a browser: the relative URLs resolve under the prefix, and so does the API.
      const tab = await browser.newPage();
      const requests: string[] = [];
      tab.on("request", (r) => requests.push(new URL(r.url()).pathname));
      await tab.goto(`${base}/console`);
      await tab.locator("h1", { hasText: "Threads" }).waitFor();
      await tab.getByText("No threads match.").waitFor();
      assert.ok(requests.includes("/agents/api/threads/search"), requests.join(" "));
      assert.deepEqual(
        requests.filter((p) => !p.startsWith("/agents/api/")),
        [],
        "every request under the prefix",
      );
    } finally {
      await browser.close();
      await h.stop();
    }
  });
});
