/**
 * The OpenAPI 3.1 document, generated (DESIGN.md decision 7) from two sources:
 *
 * - the routes the app really registers (Hono keeps them in `app.routes`), so a route can never be
 *   missing from the document, and a group that is disabled or not built is never in it;
 * - a metadata registry per area (`agents/api-docs.ts`, `sandboxes/api-docs.ts`) keyed by
 *   `"METHOD /path/{param}"`, whose request schemas are the very zod schemas the routes validate
 *   with, and whose response schemas live beside them.
 *
 * A registered route with no metadata still appears (tag from its path, a generic summary, marked
 * `x-undocumented`); `undocumentedRoutes` lists them so a unit test can insist on metadata.
 */
import { z } from "zod";

// ---- metadata --------------------------------------------------------------------------------

/** Error statuses a route may answer with beyond the automatic ones (401, 404 with path params, 422). */
export type ErrorStatus = 400 | 404 | 405 | 409 | 429;

export interface ExtraResponse {
  description: string;
  /** JSON body; omit for a bodiless response. */
  schema?: z.ZodType;
  /** Default `application/json` when there is a schema. */
  contentType?: string;
}

/** What the document says about one route, beyond what the router knows. */
export interface RouteDoc {
  tag: string;
  summary: string;
  description?: string;
  /** Path parameters (a zod object; its keys are the `{param}` names). */
  params?: z.ZodObject;
  /** Query parameters (a zod object). */
  query?: z.ZodObject;
  /** Request headers worth naming (a zod object), e.g. `Last-Event-ID`. */
  headers?: z.ZodObject;
  /** The JSON request body: the schema the route validates with. */
  body?: z.ZodType;
  /** The success body (JSON); omit for a bodiless success. */
  response?: z.ZodType;
  /**
   * Status of the main response: default 200 when there is a response or a stream, else 204. An
   * error status here documents a route that only refuses (e.g. `GET /mcp` → 405).
   */
  status?: number;
  /** Description of the success response. */
  responseDescription?: string;
  /** The success response is an SSE stream (`text/event-stream`); the text describes its events. */
  stream?: string;
  /** The success response is neither JSON nor SSE (HTML page, asset). */
  contentType?: string;
  /** Another form of the success body, as text (e.g. `/metrics?format=prometheus`): media type → what it holds. */
  textAlternatives?: Record<string, string>;
  /** More responses, by status code. */
  responses?: Record<number, ExtraResponse>;
  /** Error statuses beyond the automatic ones. */
  errors?: ErrorStatus[];
  /** Served without an API key (health, the API reference). */
  public?: boolean;
}

/** One area's metadata: routes by `"METHOD /path/{param}"`, named schemas, and its tags in display order. */
export interface ApiDocs {
  routes: Record<string, RouteDoc>;
  /** Schemas shown as named components (and referenced with `$ref`) wherever they are used. */
  components?: Record<string, z.ZodType>;
  tags?: { name: string; description: string }[];
  /**
   * JSON Schema keywords (`description`, `examples`) to add wherever a schema appears, for shared
   * schemas that carry none themselves (e.g. a name or quantity type used by several bodies).
   */
  annotations?: [z.ZodType, Record<string, unknown>][];
}

// ---- the router ------------------------------------------------------------------------------

/** The part of a Hono app this module reads. */
export interface RouteSource {
  routes: readonly { method: string; path: string }[];
}

export interface RegisteredRoute {
  /** Upper case; `ALL` for a handler registered with `app.all`/`app.use` on an exact path. */
  method: string;
  /** OpenAPI form: `/threads/{thread_id}`. */
  path: string;
}

/** Hono path → OpenAPI paths: `:p` → `{p}`, `:p{regex}` → `{p}`, an optional `:p?` → both forms. */
export function openApiPaths(honoPath: string): string[] {
  let paths = [""];
  for (const segment of honoPath.split("/").slice(1)) {
    const param = /^:([A-Za-z0-9_]+)(\{.*\})?(\?)?$/.exec(segment);
    if (param) {
      const withParam = paths.map((p) => `${p}/{${param[1]}}`);
      paths = param[3] ? [...paths, ...withParam] : withParam;
    } else if (segment === "*") {
      paths = paths.map((p) => `${p}/{path}`);
    } else {
      paths = paths.map((p) => `${p}/${segment}`);
    }
  }
  return paths.map((p) => p || "/");
}

/**
 * Every route the app registers, in registration order, without duplicates. Middleware (an `ALL`
 * entry on a wildcard path such as `/*`) is not a route and is skipped.
 */
export function registeredRoutes(app: RouteSource): RegisteredRoute[] {
  const seen = new Set<string>();
  const out: RegisteredRoute[] = [];
  for (const route of app.routes) {
    const method = route.method.toUpperCase();
    if (method === "ALL" && (route.path === "*" || route.path.endsWith("*"))) continue;
    for (const path of openApiPaths(route.path)) {
      const key = `${method} ${path}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ method, path });
    }
  }
  return out;
}

const OPERATION_METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;

/**
 * The metadata keys that document a registered route. An `ALL` route (one handler for every
 * method, e.g. a protocol endpoint answering 405 itself) is documented by the entries of its path.
 */
function docKeysFor(route: RegisteredRoute, docs: Record<string, RouteDoc>): string[] {
  if (route.method !== "ALL") {
    const key = `${route.method} ${route.path}`;
    return key in docs ? [key] : [];
  }
  return Object.keys(docs).filter((key) => key.slice(key.indexOf(" ") + 1) === route.path);
}

/** `"METHOD /path"` of every registered route that has no metadata. */
export function undocumentedRoutes(app: RouteSource, areas: ApiDocs[]): string[] {
  const docs = mergeRoutes(areas);
  return registeredRoutes(app)
    .filter((r) => docKeysFor(r, docs).length === 0)
    .map((r) => `${r.method} ${r.path}`);
}

function mergeRoutes(areas: ApiDocs[]): Record<string, RouteDoc> {
  const docs: Record<string, RouteDoc> = {};
  for (const area of areas) {
    for (const [key, doc] of Object.entries(area.routes)) {
      const [method, path] = key.split(" ");
      docs[`${method!.toUpperCase()} ${path}`] = doc;
    }
  }
  return docs;
}

// ---- error bodies (DESIGN.md decision 2) -----------------------------------------------------

export const ErrorMessage = z
  .object({ detail: z.string().describe("What went wrong.") })
  .describe("An error: `{detail: <text>}`.");

export const TypedError = z
  .object({
    detail: z.object({
      error: z.string().describe("The error type, e.g. `NotFound`, `Conflict`, `ResizeError`."),
      message: z.string(),
    }),
  })
  .describe("A typed error: `{detail: {error: <Type>, message: <text>}}`.");

export const ErrorBody = z
  .union([ErrorMessage, TypedError])
  .describe("An error body: `{detail: <text>}` or `{detail: {error, message}}`.");

export const ValidationError = z
  .object({
    detail: z.array(
      z.object({
        loc: z
          .array(z.union([z.string(), z.number().int()]))
          .describe(
            'Where the problem is: `["body", "size"]`, `["query", "limit"]`, `["path", "thread_id"]`.',
          ),
        msg: z.string().describe("What is wrong, naming the field."),
        type: z.string().describe("The kind of problem, e.g. `invalid_type`, `json_invalid`."),
      }),
    ),
  })
  .describe("The request does not match its schema (malformed JSON included).");

const ERROR_RESPONSES = {
  400: {
    name: "BadRequest",
    description: "The request is well formed but cannot be done now.",
    schema: "ErrorBody",
  },
  401: {
    name: "Unauthorized",
    description: "Missing or unknown `X-Api-Key` (only when the server has API keys configured).",
    schema: "ErrorMessage",
  },
  404: {
    name: "NotFound",
    description: "Not found (or not visible to your organization).",
    schema: "ErrorBody",
  },
  405: {
    name: "MethodNotAllowed",
    description: "This method is not served on this path.",
    schema: "ErrorBody",
  },
  409: { name: "Conflict", description: "Conflicts with the current state.", schema: "ErrorBody" },
  422: { name: "ValidationError", description: "Validation error.", schema: "ValidationError" },
  429: { name: "QuotaExceeded", description: "A quota would be exceeded.", schema: "ErrorMessage" },
} as const;

export const SECURITY_SCHEME = "ApiKeyAuth";

// ---- the document ----------------------------------------------------------------------------

export interface OpenApiInfo {
  title: string;
  version: string;
  description?: string;
  /** Security schemes required besides the API key on every non-public operation (custom auth). */
  extraSecurity?: Record<string, Json>;
}

type Json = Record<string, any>;

/** Tag of a route that has no metadata: its first path segment, capitalised. */
export function tagFromPath(path: string): string {
  const segments = path.split("/").filter((s) => s && !s.startsWith("{"));
  if (segments[0] === "v2" && segments[1] === "sandboxes" && segments[2]) return capitalise(segments[2]);
  if (segments[0] === "threads" && segments[1] === "runs") return "Thread Runs";
  if (segments[0] === "runs") return segments[1] === "crons" ? "Crons" : "Stateless Runs";
  return segments[0] ? capitalise(segments[0].replace(/^\./, "")) : "System";
}

const capitalise = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

const operationId = (method: string, path: string) =>
  `${method.toLowerCase()}_${path
    .replace(/[{}]/g, "")
    .replace(/[^A-Za-z0-9]+/g, "_")
    .replace(/^_|_$/g, "")}`;

/**
 * Options of every conversion: request schemas are described as the client writes them (`input`:
 * defaults make a field optional, a transform shows its input), and `annotations` are applied.
 */
function jsonSchemaOptions(annotations: Map<z.ZodType, Record<string, unknown>>) {
  return {
    io: "input",
    target: "draft-2020-12",
    unrepresentable: "any",
    override: (ctx: { zodSchema: unknown; jsonSchema: Json }) => {
      const extra = annotations.get(ctx.zodSchema as z.ZodType);
      if (extra) for (const [k, v] of Object.entries(extra)) ctx.jsonSchema[k] ??= v;
    },
  } as const;
}
type JsonSchemaOptions = ReturnType<typeof jsonSchemaOptions>;

/** A standalone JSON Schema without the `$schema`/`$id` keys zod adds at the top. */
function standalone(schema: z.ZodType, options: JsonSchemaOptions): Json {
  const { $schema: _s, $id: _i, ...rest } = z.toJSONSchema(schema, options) as Json;
  return rest;
}

/** Path, query and header parameters from a zod object, one per key. */
function parametersOf(
  where: "path" | "query" | "header",
  schema: z.ZodObject | undefined,
  options: JsonSchemaOptions,
): Json[] {
  if (!schema) return [];
  const json = standalone(schema, options);
  const required = new Set<string>(json.required ?? []);
  return Object.entries<Json>(json.properties ?? {}).map(([name, prop]) => {
    const { description, ...rest } = prop;
    return {
      name,
      in: where,
      required: where === "path" || required.has(name),
      ...(description ? { description } : {}),
      schema: rest,
    };
  });
}

/**
 * Builds the document from the app's registered routes and the areas' metadata. Call it once the
 * app has all its routes (the docs route does it at the first request).
 */
export function buildOpenApi(app: RouteSource, areas: ApiDocs[], info: OpenApiInfo): Json {
  const docs = mergeRoutes(areas);
  const routes = registeredRoutes(app);
  const options = jsonSchemaOptions(new Map(areas.flatMap((a) => a.annotations ?? [])));

  // Every body schema becomes a component while converting (so named schemas are `$ref`ed wherever
  // they appear); the unnamed ones are put back inline in their operation afterwards.
  const registry = z.registry<{ id: string }>();
  const idOf = new Map<z.ZodType, string>();
  const named = new Set<string>();
  const register = (schema: z.ZodType, id: string, isNamed: boolean) => {
    const known = idOf.get(schema);
    if (known) return known;
    registry.add(schema, { id });
    idOf.set(schema, id);
    if (isNamed) named.add(id);
    return id;
  };
  for (const [name, schema] of Object.entries({ ErrorMessage, TypedError, ErrorBody, ValidationError }))
    register(schema, name, true);
  for (const area of areas)
    for (const [name, schema] of Object.entries(area.components ?? {})) register(schema, name, true);

  interface Pending {
    path: string;
    method: string;
    operation: Json;
    /** Where each schema goes once converted; `request` marks the request body's media object. */
    bodies: { at: Json; id: string; request: boolean }[];
  }
  const pending: Pending[] = [];
  const usedTags: string[] = [];

  for (const route of routes) {
    const keys = docKeysFor(route, docs);
    const entries: [string, RouteDoc | undefined][] = keys.length
      ? keys.map((k) => [k.slice(0, k.indexOf(" ")).toLowerCase(), docs[k]])
      : route.method === "ALL"
        ? [
            ["get", undefined],
            ["post", undefined],
          ]
        : [[route.method.toLowerCase(), undefined]];

    for (const [method, doc] of entries) {
      if (!(OPERATION_METHODS as readonly string[]).includes(method)) continue;
      const opId = operationId(method, route.path);
      const bodies: Pending["bodies"] = [];
      const schemaRef: SchemaRef = (schema, fallbackId, at, request) => {
        bodies.push({ at, id: register(schema, fallbackId, false), request });
      };
      const operation = doc
        ? describeOperation(route.path, opId, doc, schemaRef, options)
        : genericOperation(route.path, opId);
      if (!usedTags.includes(operation.tags[0])) usedTags.push(operation.tags[0]);
      pending.push({ path: route.path, method, operation, bodies });
    }
  }

  const converted = (
    z.toJSONSchema(registry, { ...options, uri: (id) => `#/components/schemas/${id}` }) as {
      schemas: Record<string, Json>;
    }
  ).schemas;
  const clean = (id: string): Json => {
    const { $schema: _s, $id: _i, ...rest } = converted[id]!;
    return rest;
  };
  const schemas: Json = {};
  for (const id of named) schemas[id] = clean(id);

  const paths: Json = {};
  for (const { path, method, operation, bodies } of pending) {
    for (const { at, id, request } of bodies) {
      const schema = clean(id);
      at.schema = named.has(id) ? { $ref: `#/components/schemas/${id}` } : schema;
      // A body is required when its schema requires something (an empty body is read as `{}`).
      if (request)
        operation.requestBody.required = Boolean(schema.required?.length || schema.type === "array");
    }
    paths[path] ??= {};
    paths[path][method] = operation;
  }

  // Named schemas no registered route uses (a group that is disabled or not built) are left out.
  const used = new Set<string>(Object.values(ERROR_RESPONSES).map((r) => r.schema));
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(visit);
    else if (node && typeof node === "object") {
      for (const [key, value] of Object.entries(node)) {
        if (key === "$ref" && typeof value === "string" && value.startsWith("#/components/schemas/")) {
          const id = value.slice("#/components/schemas/".length);
          if (!used.has(id)) {
            used.add(id);
            visit(schemas[id]);
          }
        } else visit(value);
      }
    }
  };
  visit(paths);
  for (const id of [...used]) visit(schemas[id]);
  for (const id of Object.keys(schemas)) if (!used.has(id)) delete schemas[id];

  const declaredTags = areas.flatMap((a) => a.tags ?? []);
  const tags = [
    ...declaredTags.filter((t) => usedTags.includes(t.name)),
    ...usedTags.filter((name) => !declaredTags.some((t) => t.name === name)).map((name) => ({ name })),
  ];

  // Custom auth: its schemes are required beside the API key wherever the key is.
  const extra = info.extraSecurity ?? {};
  const requirement = {
    [SECURITY_SCHEME]: [],
    ...Object.fromEntries(Object.keys(extra).map((k) => [k, []])),
  };
  for (const operations of Object.values(paths) as Json[])
    for (const operation of Object.values(operations) as Json[])
      if (operation.security?.length) operation.security = [requirement];

  return {
    openapi: "3.1.0",
    info: {
      title: info.title,
      version: info.version,
      ...(info.description ? { description: info.description } : {}),
    },
    tags,
    paths,
    components: {
      schemas,
      responses: Object.fromEntries(
        Object.values(ERROR_RESPONSES).map((r) => [
          r.name,
          {
            description: r.description,
            content: { "application/json": { schema: { $ref: `#/components/schemas/${r.schema}` } } },
          },
        ]),
      ),
      securitySchemes: {
        [SECURITY_SCHEME]: {
          type: "apiKey",
          in: "header",
          name: "X-Api-Key",
          description:
            "An API key of your organization. Required on every request except the public ones " +
            "(`/ok`, `/docs`, `/openapi.json`) when the server has API keys configured; with none " +
            "configured the API is open and everything belongs to the `default` organization.",
        },
        ...extra,
      },
    },
    security: [requirement],
  };
}

/** Asks for `schema` to be converted into `at.schema`; `request` when `at` is the request body. */
type SchemaRef = (schema: z.ZodType, fallbackId: string, at: Json, request: boolean) => void;

function describeOperation(
  path: string,
  opId: string,
  doc: RouteDoc,
  ref: SchemaRef,
  options: JsonSchemaOptions,
): Json {
  const parameters = [
    ...pathParameters(path, doc.params, options),
    ...parametersOf("query", doc.query, options),
    ...parametersOf("header", doc.headers, options),
  ];
  const operation: Json = {
    tags: [doc.tag],
    summary: doc.summary,
    ...(doc.description ? { description: doc.description } : {}),
    operationId: opId,
    ...(parameters.length ? { parameters } : {}),
  };
  if (doc.body) {
    const media: Json = {};
    operation.requestBody = { content: { "application/json": media } };
    ref(doc.body, `${opId}_body`, media, true);
  }

  const responses: Json = {};
  const status = doc.status ?? (doc.response || doc.stream || doc.contentType ? 200 : 204);
  const success: Json = {
    description: doc.responseDescription ?? (status === 204 ? "Done." : "Successful Response"),
  };
  if (doc.stream) {
    success.description = doc.responseDescription ?? "A Server-Sent Events stream.";
    success.content = { "text/event-stream": { schema: { type: "string", description: doc.stream } } };
  } else if (doc.response) {
    const media: Json = {};
    success.content = { [doc.contentType ?? "application/json"]: media };
    ref(doc.response, `${opId}_response`, media, false);
  } else if (doc.contentType) {
    success.content = { [doc.contentType]: { schema: { type: "string" } } };
  }
  for (const [contentType, description] of Object.entries(doc.textAlternatives ?? {})) {
    success.content ??= {};
    success.content[contentType] = { schema: { type: "string", description } };
  }
  responses[String(status)] = success;

  for (const [code, extra] of Object.entries(doc.responses ?? {})) {
    const response: Json = { description: extra.description };
    if (extra.schema) {
      const media: Json = {};
      response.content = { [extra.contentType ?? "application/json"]: media };
      ref(extra.schema, `${opId}_${code}`, media, false);
    } else if (extra.contentType) {
      response.content = { [extra.contentType]: { schema: { type: "string" } } };
    }
    responses[code] = response;
  }

  const errors = new Set<number>(doc.errors ?? []);
  if (!doc.public) errors.add(401);
  if (path.includes("{")) errors.add(404);
  if (doc.params || doc.query || doc.body || path.includes("{")) errors.add(422);
  for (const code of [...errors].sort((a, b) => a - b)) {
    if (String(code) in responses) continue;
    const known = ERROR_RESPONSES[code as keyof typeof ERROR_RESPONSES];
    responses[String(code)] = known
      ? { $ref: `#/components/responses/${known.name}` }
      : { description: "Error" };
  }
  operation.responses = responses;
  operation.security = doc.public ? [] : [{ [SECURITY_SCHEME]: [] }];
  return operation;
}

/** Path parameters: from the zod schema when given, else a string per `{param}` of the path. */
function pathParameters(path: string, schema?: z.ZodObject, options?: JsonSchemaOptions): Json[] {
  const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
  const fromSchema = new Map(
    schema && options ? parametersOf("path", schema, options).map((p) => [p.name, p]) : [],
  );
  return names.map(
    (name) => fromSchema.get(name) ?? { name, in: "path", required: true, schema: { type: "string" } },
  );
}

function genericOperation(path: string, opId: string): Json {
  const parameters = pathParameters(path, undefined);
  return {
    tags: [tagFromPath(path)],
    summary: `${path} (not yet described)`,
    operationId: opId,
    ...(parameters.length ? { parameters } : {}),
    responses: { "200": { description: "Successful Response" } },
    security: [{ [SECURITY_SCHEME]: [] }],
    "x-undocumented": true,
  };
}
