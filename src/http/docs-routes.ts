/**
 * The API reference: `GET /openapi.json` (OpenAPI 3.1, built from the app's routes and the areas'
 * metadata, see `openapi.ts`) and `GET /docs`, an interactive page (Swagger UI, try-it-out included)
 * whose scripts and styles Hangar serves itself from the `swagger-ui-dist` package under `/docs/`,
 * so it works with no internet. All of them are public (no API key): `GET /openapi.json`, `GET /docs`
 * and `GET /docs/<asset>`.
 *
 * Mounted with `app.route("/", docsRoutes(app, { areas }))`: the document is built from the app's routes
 * at the first request, when every route module is mounted (routes mounted after this one count too).
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Hono } from "hono";
import { z } from "zod";
import { notFound } from "../errors.js";
import type { AppEnv } from "./context.js";
import { type ApiDocs, buildOpenApi, type RouteSource } from "./openapi.js";
import { params } from "./validation.js";

const require = createRequire(import.meta.url);
const SWAGGER_UI_DIR = dirname(require.resolve("swagger-ui-dist/package.json"));
const HANGAR_VERSION: string = require("../../package.json").version;

export const DOCS_TITLE = "Hangar API";

const DESCRIPTION = `An open, self-hosted LangGraph Agent Server and sandbox control plane.

- **Agent server**: assistants, threads, runs (thread and stateless), crons, store, A2A and MCP, wire-compatible with the official LangGraph SDKs.
- **Sandboxes** under \`/v2/sandboxes\`: volumes and templates, scoped to your organization.

**Authentication**: when the server has API keys configured, every request but \`/ok\`, \`/docs\` and \`/openapi.json\` carries \`X-Api-Key\` (use *Authorize*); with none configured the API is open.

**Errors** are JSON: \`{"detail": "<text>"}\`, \`{"detail": {"error": "<Type>", "message": "<text>"}}\`, or for an invalid request a 422 \`{"detail": [{"loc": [...], "msg": "...", "type": "..."}]}\`.`;

// ---- the page and its assets -----------------------------------------------------------------

const INIT_SCRIPT = `"use strict";
// Hangar's API reference: Swagger UI on this server's /openapi.json (relative, so a path prefix works).
window.ui = SwaggerUIBundle({
  url: new URL("openapi.json", document.baseURI).href,
  dom_id: "#swagger-ui",
  layout: "BaseLayout",
  deepLinking: true,
  docExpansion: "list",
  defaultModelsExpandDepth: 0,
  displayRequestDuration: true,
  filter: true,
  persistAuthorization: true,
  tryItOutEnabled: false,
  validatorUrl: null,
});
`;

// Relative URLs: the page is `/docs`, so `docs/x` is `/docs/x` (and still right behind a path prefix).
const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>${DOCS_TITLE}</title>
    <link rel="stylesheet" href="docs/swagger-ui.css">
    <link rel="icon" type="image/png" href="docs/favicon-32x32.png" sizes="32x32">
    <link rel="icon" type="image/png" href="docs/favicon-16x16.png" sizes="16x16">
  </head>
  <body>
    <noscript>This page needs JavaScript; the OpenAPI document is at <a href="openapi.json">openapi.json</a>.</noscript>
    <div id="swagger-ui"></div>
    <script src="docs/swagger-ui-bundle.js"></script>
    <script src="docs/hangar-docs.js"></script>
  </body>
</html>
`;

/** Only this server's own assets; Swagger UI styles elements inline, and may show data: images. */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "connect-src 'self'; font-src 'self' data:; base-uri 'self'; form-action 'self'; frame-ancestors 'self'";

interface Asset {
  type: string;
  load: () => Promise<string | Uint8Array<ArrayBuffer>>;
}

/** A file of swagger-ui-dist; its source-map comment is dropped (the maps are not served). */
const fromPackage = (file: string, type: string): Asset => ({
  type,
  load: async () => {
    const bytes = await readFile(join(SWAGGER_UI_DIR, file));
    if (!type.startsWith("text/")) return new Uint8Array(bytes);
    return bytes.toString("utf8").replace(/\n?\/[/*]# sourceMappingURL=\S+?(\s*\*\/)?\s*$/, "\n");
  },
});

const ASSETS: Record<string, Asset> = {
  "swagger-ui-bundle.js": fromPackage("swagger-ui-bundle.js", "text/javascript; charset=utf-8"),
  "swagger-ui.css": fromPackage("swagger-ui.css", "text/css; charset=utf-8"),
  "favicon-32x32.png": fromPackage("favicon-32x32.png", "image/png"),
  "favicon-16x16.png": fromPackage("favicon-16x16.png", "image/png"),
  "hangar-docs.js": { type: "text/javascript; charset=utf-8", load: async () => INIT_SCRIPT },
};

export const DOCS_ASSETS = Object.keys(ASSETS);

const AssetPath = z.object({ asset: z.string() });

// ---- metadata of these routes ----------------------------------------------------------------

export const docsApiDocs: ApiDocs = {
  routes: {
    "GET /openapi.json": {
      tag: "System",
      summary: "This API's OpenAPI 3.1 document",
      response: z.record(z.string(), z.unknown()).describe("An OpenAPI 3.1 document."),
      public: true,
    },
    "GET /docs": {
      tag: "System",
      summary: "Interactive API reference (this page)",
      contentType: "text/html",
      responseDescription: "An HTML page; its scripts and styles are served under `/docs/`.",
      public: true,
    },
    "GET /docs/{asset}": {
      tag: "System",
      summary: "A script, style sheet or icon of the API reference page",
      params: z.object({ asset: z.enum(DOCS_ASSETS as [string, ...string[]]) }),
      contentType: "application/octet-stream",
      responseDescription: "The asset (JavaScript, CSS or PNG).",
      public: true,
    },
  },
};

// ---- routes ----------------------------------------------------------------------------------

/**
 * `app` is the app whose routes the document lists; they are read at the first request, with `opts.areas`,
 * every area's metadata. `opts.customAuth`: the schemes the project's auth handler checks (langgraph.json
 * `auth`), shown as required beside the API key; undefined without custom auth.
 */
export function docsRoutes(
  app: RouteSource,
  opts: {
    areas: () => Promise<ApiDocs[]>;
    customAuth?: Record<string, Record<string, unknown>> | undefined;
  },
): Hono<AppEnv> {
  let document: Promise<string> | undefined;
  const cache = new Map<string, Promise<string | Uint8Array<ArrayBuffer>>>();

  return new Hono<AppEnv>()
    .get("/openapi.json", async (c) => {
      document ??= opts.areas().then((docs) =>
        JSON.stringify(
          buildOpenApi(app, [...docs, docsApiDocs], {
            title: DOCS_TITLE,
            version: HANGAR_VERSION,
            description: DESCRIPTION,
            extraSecurity: opts.customAuth,
          }),
        ),
      );
      return c.body(await document, 200, { "Content-Type": "application/json" });
    })
    .get("/docs", (c) =>
      c.html(PAGE, 200, {
        "Content-Security-Policy": CSP,
        "Cache-Control": "no-cache",
        "X-Content-Type-Options": "nosniff",
      }),
    )
    .get("/docs/:asset", async (c) => {
      const { asset: name } = params(c, AssetPath);
      const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name]! : undefined;
      if (!asset) throw notFound(`No such asset: ${name}`);
      let content = cache.get(name);
      if (!content) {
        content = asset.load();
        cache.set(name, content);
        content.catch(() => cache.delete(name));
      }
      return c.body(await content, 200, {
        "Content-Type": asset.type,
        "Cache-Control": "public, max-age=3600",
        "X-Content-Type-Options": "nosniff",
      });
    });
}
