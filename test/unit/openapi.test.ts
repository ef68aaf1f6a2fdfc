import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { Hono } from "hono";
import { z } from "zod";
import { agentApiDocs } from "../../src/agents/api-docs.js";
import * as S from "../../src/agents/schemas.js";
import { consoleApiDocs } from "../../src/console/routes.js";
import { docsApiDocs } from "../../src/http/docs-routes.js";
import {
  type ApiDocs,
  buildOpenApi,
  openApiPaths,
  registeredRoutes,
  undocumentedRoutes,
} from "../../src/http/openapi.js";
import { protocolApiDocs } from "../../src/protocol/routes.js";
import { sandboxApiDocs } from "../../src/sandboxes/api-docs.js";
import { buildApp, type InProcessApp } from "../helpers/app.js";

const AREAS = [agentApiDocs, sandboxApiDocs, docsApiDocs, consoleApiDocs, protocolApiDocs];
const INFO = { title: "Hangar API", version: "0.0.0-test" };
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/**
 * The routes a Hono app registers, read straight from its router (`app.routes`), independently of
 * `registeredRoutes`: middleware (`ALL` on a wildcard path) is skipped, `:p` → `{p}`, `:p?` → both.
 */
function routerRoutes(app: { routes: readonly { method: string; path: string }[] }): Set<string> {
  const out = new Set<string>();
  for (const { method, path } of app.routes) {
    if (method === "ALL" && path.endsWith("*")) continue;
    const optional = /\/:(\w+)\?$/.exec(path);
    const variants = optional ? [path.slice(0, optional.index), path.replace(/\?$/, "")] : [path];
    for (const v of variants) out.add(`${method} ${v.replace(/:(\w+)(\{[^}]*\})?/g, "{$1}") || "/"}`);
  }
  return out;
}

/** `METHOD path` of every operation in a document. */
function documented(doc: any): Set<string> {
  const out = new Set<string>();
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const method of Object.keys(item))
      if (METHODS.includes(method)) out.add(`${method.toUpperCase()} ${path}`);
  }
  return out;
}

/** Every `$ref` in the document points at something that exists. */
function unresolvedRefs(doc: any): string[] {
  const missing: string[] = [];
  const walk = (node: unknown) => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === "object") {
      for (const [key, value] of Object.entries(node)) {
        if (key === "$ref" && typeof value === "string") {
          const target = value
            .replace(/^#\//, "")
            .split("/")
            .reduce<any>((at, part) => at?.[part.replace(/~1/g, "/").replace(/~0/g, "~")], doc);
          if (!value.startsWith("#/") || target === undefined) missing.push(value);
        } else walk(value);
      }
    }
  };
  walk(doc);
  return missing;
}

describe("openapi builder", () => {
  test("Hono paths become OpenAPI paths", () => {
    assert.deepEqual(openApiPaths("/threads/:thread_id/runs"), ["/threads/{thread_id}/runs"]);
    assert.deepEqual(openApiPaths("/a/:id{[0-9]+}"), ["/a/{id}"]);
    assert.deepEqual(openApiPaths("/assistants/:id/subgraphs/:namespace?"), [
      "/assistants/{id}/subgraphs",
      "/assistants/{id}/subgraphs/{namespace}",
    ]);
    assert.deepEqual(openApiPaths("/"), ["/"]);
  });

  test("registered routes: middleware skipped, mounts prefixed, duplicates dropped", () => {
    const sub = new Hono()
      .use("*", async (_c, next) => next())
      .get("/items/:id", (c) => c.text(""))
      .all("/rpc", (c) => c.text(""));
    const app = new Hono();
    app.use(async (_c, next) => next());
    app.route("/v1", sub);
    app.get(
      "/x",
      async (_c, next) => next(),
      (c) => c.text(""),
    );
    assert.deepEqual(
      registeredRoutes(app).map((r) => `${r.method} ${r.path}`),
      ["GET /v1/items/{id}", "ALL /v1/rpc", "GET /x"],
    );
  });

  test("metadata for routes that are not registered is ignored; routes without metadata still appear", () => {
    const app = new Hono().get("/known/:id", (c) => c.text("")).get("/extra", (c) => c.text(""));
    const area: ApiDocs = {
      routes: {
        "GET /known/{id}": { tag: "Known", summary: "A known route", params: z.object({ id: z.string() }) },
        "POST /not-built-yet": { tag: "Later", summary: "Not registered", body: z.object({ a: z.string() }) },
      },
      components: { Unused: z.object({ u: z.number() }) },
    };
    const doc = buildOpenApi(app, [area], INFO);
    assert.deepEqual([...documented(doc)].sort(), ["GET /extra", "GET /known/{id}"]);
    assert.equal(doc.paths["/extra"].get["x-undocumented"], true);
    assert.equal(doc.paths["/extra"].get.tags[0], "Extra");
    assert.equal(doc.paths["/known/{id}"].get.summary, "A known route");
    assert.deepEqual(
      doc.tags.map((t: any) => t.name),
      ["Known", "Extra"],
    );
    assert.equal(doc.components.schemas.Unused, undefined, "a schema no route uses is left out");
    assert.deepEqual(undocumentedRoutes(app, [area]), ["GET /extra"]);
  });

  test("an ALL route is documented by the metadata of its path", () => {
    const app = new Hono().all("/rpc", (c) => c.text(""));
    const area: ApiDocs = {
      routes: {
        "POST /rpc": { tag: "RPC", summary: "Call" },
        "GET /rpc": { tag: "RPC", summary: "Refused", status: 405 },
      },
    };
    assert.deepEqual([...documented(buildOpenApi(app, [area], INFO))].sort(), ["GET /rpc", "POST /rpc"]);
    assert.deepEqual(undocumentedRoutes(app, [area]), []);
  });
});

describe("the server's OpenAPI document", () => {
  let built: InProcessApp;
  let doc: any;
  before(async () => {
    built = await buildApp();
    const res = await built.app.request("/openapi.json");
    assert.equal(res.status, 200);
    doc = await res.json();
  });
  after(async () => {
    await built?.close();
  });

  test("every route the server registers has metadata (add it to the area's api-docs.ts)", () => {
    const missing = undocumentedRoutes(built.app, AREAS);
    assert.deepEqual(missing, [], `routes without metadata:\n  ${missing.join("\n  ")}`);
  });

  test("every route the router holds is in the document, and nothing else", () => {
    const routes = routerRoutes(built.app);
    assert.ok(routes.size > 50, `expected the whole API, the router has ${routes.size} routes`);
    const ops = documented(doc);
    // An `ALL` route appears as the methods its metadata names.
    const expanded = [...routes].flatMap((r) => {
      if (!r.startsWith("ALL ")) return [r];
      const path = r.slice(4);
      return [...ops].filter((o) => o.slice(o.indexOf(" ") + 1) === path);
    });
    const absent = expanded.filter((r) => !ops.has(r));
    assert.deepEqual(absent, [], `registered but not in /openapi.json:\n  ${absent.join("\n  ")}`);
    const extra = [...ops].filter((o) => !expanded.includes(o));
    assert.deepEqual(extra, [], `in /openapi.json but not registered:\n  ${extra.join("\n  ")}`);
  });

  test("is a valid OpenAPI 3.1 document whose references all resolve", async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    assert.equal(validator.version, "3.1");
    assert.ok(result.valid, JSON.stringify(result.errors, null, 2));
    assert.match(doc.openapi, /^3\.1\.\d+$/);
    assert.equal(doc.info.title, "Hangar API");
    assert.deepEqual(unresolvedRefs(doc), []);
  });

  test("declares the X-Api-Key scheme; every operation but the public ones requires it", () => {
    assert.deepEqual(doc.components.securitySchemes.ApiKeyAuth, {
      ...doc.components.securitySchemes.ApiKeyAuth,
      type: "apiKey",
      in: "header",
      name: "X-Api-Key",
    });
    const publicOps = [
      "GET /ok",
      "GET /openapi.json",
      "GET /docs",
      "GET /docs/{asset}",
      "GET /console",
      "GET /console/",
      "GET /console/assets/{file}",
    ];
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        const key = `${method.toUpperCase()} ${path}`;
        if (publicOps.includes(key)) assert.deepEqual(op.security, [], key);
        else {
          assert.deepEqual(op.security, [{ ApiKeyAuth: [] }], key);
          assert.ok(op.responses["401"], `${key} documents 401`);
        }
      }
    }
  });

  test("every operation has a tag, a summary, and documents its errors", () => {
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        const key = `${method.toUpperCase()} ${path}`;
        assert.equal(op.tags?.length, 1, key);
        assert.ok(op.summary, key);
        assert.ok(op.operationId, key);
        assert.ok(Object.keys(op.responses).length > 0, key);
        if (path.includes("{")) assert.ok(op.responses["404"], `${key} documents 404`);
        if (op.requestBody || op.parameters?.length) assert.ok(op.responses["422"], `${key} documents 422`);
      }
    }
    const tags = doc.tags.map((t: any) => t.name);
    for (const group of [
      "Assistants",
      "Threads",
      "Thread Runs",
      "Stateless Runs",
      "System",
      "Volumes",
      "Templates",
    ])
      assert.ok(tags.includes(group), `tag ${group} in ${tags}`);
  });

  test("request bodies are the schemas the routes validate with", () => {
    const { $schema: _, ...runCreate } = z.toJSONSchema(S.RunCreate, {
      io: "input",
      target: "draft-2020-12",
      unrepresentable: "any",
    }) as any;
    assert.deepEqual(doc.components.schemas.RunCreate, runCreate);
    const create = doc.paths["/threads/{thread_id}/runs"].post;
    assert.deepEqual(create.requestBody.content["application/json"].schema, {
      $ref: "#/components/schemas/RunCreate",
    });
    assert.equal(create.requestBody.required, true);
    assert.equal(doc.paths["/threads"].post.requestBody.required, false, "an empty body creates a thread");
    const patch = doc.paths["/v2/sandboxes/volumes/{name}"].patch;
    assert.deepEqual(Object.keys(patch.responses).sort(), ["200", "400", "401", "404", "409", "422", "429"]);
    assert.deepEqual(patch.responses["200"].content["application/json"].schema, {
      $ref: "#/components/schemas/Volume",
    });
  });

  test("the sandbox area documents every status its routes answer", () => {
    // From the routes (sandboxes/*.ts): 401 and 422 everywhere, 404 on every path with a parameter,
    // and the statuses each one throws (tenant limits 422/429, TooManyCommands 429, upload 413, …).
    const expected: Record<string, number[]> = {
      "POST /v2/sandboxes/volumes": [201, 401, 409, 422, 429],
      "PATCH /v2/sandboxes/volumes/{name}": [200, 400, 401, 404, 409, 422, 429],
      "POST /v2/sandboxes/templates": [201, 400, 401, 409, 422],
      "POST /v2/sandboxes/boxes": [201, 400, 401, 404, 408, 409, 422, 429, 503],
      "POST /v2/sandboxes/boxes/{name}/start": [202, 400, 401, 404, 422],
      "POST /v2/sandboxes/pools": [201, 400, 401, 409, 422, 429, 504],
      "PATCH /v2/sandboxes/pools/{name}": [200, 401, 404, 409, 422, 429],
      "POST /v2/sandboxes/dataplane/{id}/execute": [200, 400, 401, 404, 408, 422, 429],
      "GET /v2/sandboxes/dataplane/{id}/execute/ws": [101, 400, 401, 403, 404, 422, 426],
      "POST /v2/sandboxes/dataplane/{id}/upload": [200, 400, 401, 404, 413, 422],
      "GET /v2/sandboxes/dataplane/{id}/download": [200, 400, 401, 404, 422],
    };
    for (const [key, statuses] of Object.entries(expected)) {
      const [method, path] = key.split(" ") as [string, string];
      const op = doc.paths[path][method.toLowerCase()];
      assert.deepEqual(Object.keys(op.responses).map(Number), statuses, key);
    }
    const tooMany = doc.paths["/v2/sandboxes/dataplane/{id}/execute"].post.responses["429"];
    assert.match(tooMany.description, /TooManyCommands/);
  });

  test("error responses have the shapes of the error model", () => {
    const { schemas, responses } = doc.components;
    assert.deepEqual(schemas.ErrorMessage.required, ["detail"]);
    assert.equal(schemas.ErrorMessage.properties.detail.type, "string");
    assert.deepEqual(schemas.TypedError.properties.detail.required, ["error", "message"]);
    assert.deepEqual(schemas.ValidationError.properties.detail.items.required, ["loc", "msg", "type"]);
    const schemaOf = (name: string) => responses[name].content["application/json"].schema.$ref;
    assert.equal(schemaOf("NotFound"), "#/components/schemas/ErrorBody");
    assert.equal(schemaOf("Conflict"), "#/components/schemas/ErrorBody");
    assert.equal(schemaOf("ValidationError"), "#/components/schemas/ValidationError");
    assert.equal(schemaOf("Unauthorized"), "#/components/schemas/ErrorMessage");
  });
});
