import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { buildApp } from "../helpers/app.js";
import { type Hangar, startHangar } from "../helpers/server.js";

const T = { timeout: 60_000 };
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/** `METHOD /path/{param}` of every route the app's router holds (middleware skipped). */
function routerRoutes(app: { routes: readonly { method: string; path: string }[] }): string[] {
  const out = new Set<string>();
  for (const { method, path } of app.routes) {
    if (method === "ALL" && path.endsWith("*")) continue;
    const optional = /\/:(\w+)\?$/.exec(path);
    const variants = optional ? [path.slice(0, optional.index), path.replace(/\?$/, "")] : [path];
    for (const v of variants) out.add(`${method} ${v.replace(/:(\w+)(\{[^}]*\})?/g, "{$1}") || "/"}`);
  }
  return [...out];
}

/** Absolute or protocol-relative URLs in `src`/`href` attributes, CSS `url()` and `@import`. */
function externalReferences(text: string): string[] {
  const refs = [
    ...text.matchAll(/\b(?:src|href)\s*=\s*["']?([^"'\s>]+)/gi),
    ...text.matchAll(/url\(\s*["']?([^"')]+)/gi),
    ...text.matchAll(/@import\s+["']([^"']+)/gi),
  ].map((m) => m[1]!);
  return refs.filter((ref) => /^(?:[a-z][a-z0-9+.-]*:)?\/\//i.test(ref) && !ref.startsWith("data:"));
}

describe("/openapi.json and /docs", () => {
  let h: Hangar;
  let doc: any;
  before(async () => {
    h = await startHangar();
    const res = await fetch(`${h.url}/openapi.json`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /application\/json/);
    doc = await res.json();
  });
  after(async () => {
    await h?.stop();
  });

  test("/openapi.json is a valid OpenAPI 3.1 document", T, async () => {
    assert.match(doc.openapi, /^3\.1\.\d+$/);
    assert.equal(doc.info.title, "Hangar API");
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    assert.equal(validator.version, "3.1");
    assert.ok(result.valid, JSON.stringify(result.errors, null, 2));
    assert.equal(doc.components.securitySchemes.ApiKeyAuth.name, "X-Api-Key");
  });

  test("it lists every route the server registers (read from the router)", T, async () => {
    // The same app as the server's, built in this process so its router can be read.
    const built = await buildApp();
    try {
      const operations = new Set<string>();
      for (const [path, item] of Object.entries<any>(doc.paths))
        for (const method of Object.keys(item))
          if (METHODS.includes(method)) operations.add(`${method.toUpperCase()} ${path}`);
      const routes = routerRoutes(built.app);
      assert.ok(routes.length > 50, `the router has ${routes.length} routes`);
      const missing = routes.filter((r) =>
        r.startsWith("ALL ")
          ? ![...operations].some((o) => o.endsWith(` ${r.slice(4)}`))
          : !operations.has(r),
      );
      assert.deepEqual(
        missing,
        [],
        `registered routes missing from /openapi.json:\n  ${missing.join("\n  ")}`,
      );
      const undocumented = Object.entries<any>(doc.paths).flatMap(([path, item]) =>
        Object.entries<any>(item)
          .filter(([, op]) => op["x-undocumented"])
          .map(([method]) => `${method.toUpperCase()} ${path}`),
      );
      assert.deepEqual(undocumented, [], "every route has its metadata");
    } finally {
      await built.close();
    }
  });

  test("/docs is an HTML page whose assets are served here, with no external URL", T, async () => {
    const res = await fetch(`${h.url}/docs`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /text\/html/);
    assert.match(res.headers.get("content-security-policy") ?? "", /script-src 'self'/);
    const html = await res.text();
    assert.match(html, /<title>Hangar API<\/title>/);
    assert.deepEqual(externalReferences(html), []);

    const assets = [...html.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    assert.ok(
      assets.some((a) => a.endsWith(".js")) && assets.some((a) => a.endsWith(".css")),
      String(assets),
    );
    for (const asset of assets) {
      const url = new URL(asset, `${h.url}/docs`);
      assert.equal(url.origin, h.url, asset);
      const got = await fetch(url);
      assert.equal(got.status, 200, `${asset} → ${got.status}`);
      const type = got.headers.get("content-type") ?? "";
      if (asset.endsWith(".js")) assert.match(type, /javascript/, asset);
      if (asset.endsWith(".css")) {
        assert.match(type, /text\/css/, asset);
        assert.deepEqual(externalReferences(await got.text()), [], `${asset} loads nothing from elsewhere`);
      } else await got.arrayBuffer();
    }
    const init = await (await fetch(`${h.url}/docs/hangar-docs.js`)).text();
    assert.match(init, /openapi\.json/);
    assert.doesNotMatch(init, /https?:\/\//);
  });

  test("an unknown asset is a 404 with a JSON detail", T, async () => {
    for (const path of ["/docs/nope.js", "/docs/swagger-ui-bundle.js.map", "/docs/..%2Fpackage.json"]) {
      const res = await fetch(`${h.url}${path}`);
      assert.equal(res.status, 404, path);
      assert.equal(typeof (await res.json()).detail, "string", path);
    }
  });
});

describe("the API reference with API keys configured", () => {
  let h: Hangar;
  before(async () => {
    h = await startHangar({ env: { HANGAR_API_KEYS: "docs-test-key:acme" } });
  });
  after(async () => {
    await h?.stop();
  });

  test("/openapi.json, /docs and its assets need no key; the API does", T, async () => {
    for (const path of ["/openapi.json", "/docs", "/docs/swagger-ui-bundle.js", "/docs/swagger-ui.css"]) {
      const res = await fetch(`${h.url}${path}`);
      assert.equal(res.status, 200, path);
      await res.arrayBuffer();
    }
    const res = await fetch(`${h.url}/threads/search`, { method: "POST", body: "{}" });
    assert.equal(res.status, 401);
    await res.arrayBuffer();
  });
});
