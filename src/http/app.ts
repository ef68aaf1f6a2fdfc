import { type Context, Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { cors } from "hono/cors";
import { createMiddleware } from "hono/factory";
import { a2aRoutes } from "../agents/a2a/routes.js";
import { assistantRoutes } from "../agents/assistants.js";
import type { AgentDeps } from "../agents/context.js";
import { cronRoutes } from "../agents/crons.js";
import { mcpRoutes } from "../agents/mcp/routes.js";
import { metricsRoutes } from "../agents/metrics.js";
import { runRoutes } from "../agents/runs.js";
import { storeRoutes } from "../agents/store.js";
import { systemRoutes } from "../agents/system.js";
import { threadRoutes } from "../agents/threads.js";
import type { CorsConfig } from "../config/index.js";
import { consoleRoutes, consoleWebSocketCredentials } from "../console/routes.js";
import { validationFailed } from "../errors.js";
import type { Logger } from "../logger.js";
import { sandboxRoutes } from "../sandboxes/routes.js";
import { uiRoutes } from "../ui/routes.js";
import { apiKeyAuth, customAuthentication } from "./auth.js";
import type { AppEnv } from "./context.js";
import { composeCustomApp } from "./custom-app.js";
import { docsRoutes } from "./docs-routes.js";
import { errorHandler, notFoundHandler } from "./errors.js";
import { storableProblem } from "./json-limits.js";

/** Headers the official SDK reads from responses; always exposed to browsers. */
const EXPOSED = ["content-location", "location", "x-pagination-total", "x-pagination-next"];

/**
 * Hono's `cors`. It answers preflights itself; on other requests it sets its headers on the response
 * before the handler runs, and Hono then copies that response into the handler's, which makes the Node
 * adapter build a whole web `Response` and stream its body (about 5 % of the API thread under load).
 * So those requests get its headers on the handler's response, once it has one.
 */
export function corsMiddleware(config: CorsConfig | undefined) {
  const setHeaders = honoCors(config);
  const nothingNext = async () => {};
  return createMiddleware(async (c, next) => {
    if (c.req.method === "OPTIONS") return setHeaders(c, next);
    await next();
    try {
      await setHeaders(c, nothingNext);
    } catch {
      // Headers that cannot change (a response a custom route fetched): a copy takes them.
      c.res = new Response(c.res.body, c.res);
      await setHeaders(c, nothingNext);
    }
  });
}

/** A pattern that must match a whole string (Python's `re.fullmatch`), not a part of it. */
const wholeMatch = (source: string) => new RegExp(`^(?:${source})$`);

function honoCors(config: CorsConfig | undefined) {
  // The whole origin must match, as the official server's fullmatch: `https://app\.example\.com` must not
  // admit `https://app.example.com.evil.net`.
  const regex = config?.allow_origin_regex ? wholeMatch(config.allow_origin_regex) : null;
  const origins = config?.allow_origins;
  return cors({
    origin: regex
      ? (origin) => (regex.test(origin) || origins?.includes(origin) ? origin : null)
      : origins && !origins.includes("*")
        ? origins
        : "*",
    allowMethods: config?.allow_methods ?? ["GET", "HEAD", "PUT", "POST", "DELETE", "PATCH"],
    allowHeaders: config?.allow_headers ?? [],
    credentials: config?.allow_credentials ?? false,
    exposeHeaders: [...new Set([...(config?.expose_headers ?? []), ...EXPOSED])],
    maxAge: config?.max_age,
  });
}

/**
 * Private Network Access: before a page on a public origin (LangGraph Studio, https://smith.langchain.com)
 * calls a server on loopback or a private address, Chromium sends a preflight with
 * `Access-Control-Request-Private-Network: true`, and lets the request through only if the answer carries
 * `Access-Control-Allow-Private-Network: true`. Answered for origins CORS allows: always in `hangar dev`
 * (Studio on loopback is what it is for), in `serve` only when `http.cors` names the origins, since a
 * production server left with the default "any origin" should not invite every website its users visit.
 * Wraps the CORS middleware, which answers preflights itself.
 */
function privateNetworkAccess() {
  return createMiddleware(async (c, next) => {
    await next();
    if (
      c.req.method === "OPTIONS" &&
      c.req.header("access-control-request-private-network")?.toLowerCase() === "true" &&
      c.res.headers.has("access-control-allow-origin")
    )
      c.res.headers.set("Access-Control-Allow-Private-Network", "true");
  });
}

/**
 * Bodies larger than the limit get 413 before anything reads them. File uploads to a sandbox are
 * files, not requests to store: they stream into the sandbox under a limit of their own, counted as
 * they arrive (sandboxes/files.ts, HANGAR_SANDBOX_MAX_UPLOAD_MB). A request with a `Content-Length` (or, in
 * HTTP/1.1, with no length and no chunked encoding: no body) is judged by its headers here; only a
 * chunked body goes through Hono's `bodyLimit`, which counts it as it is read. (`bodyLimit` looks at
 * the request's body first, which makes the Node adapter build a whole web `Request` for every request,
 * GETs included: 6 % of the API thread's CPU under load.)
 */
function requestBodyLimit(maxBytes: number) {
  const tooLarge = (c: Context) =>
    c.json(
      { detail: `Request body larger than ${maxBytes / 1024 / 1024} MiB (the limit, HANGAR_MAX_BODY_MB)` },
      413,
    );
  const countChunked = bodyLimit({ maxSize: maxBytes, onError: tooLarge });
  return createMiddleware(async (c, next) => {
    if (UPLOAD_PATH.test(c.req.path)) return next();
    const headers = c.req.raw.headers;
    if (headers.has("transfer-encoding")) return countChunked(c, next);
    const length = headers.get("content-length");
    if (length !== null && Number.parseInt(length, 10) > maxBytes) return tooLarge(c);
    return next();
  });
}
/**
 * Paths and queries must be storable too (json-limits.ts): routes that read a parameter themselves
 * (A2A, agent cards) would otherwise hand NUL bytes to Postgres, which refuses them with an error.
 */
const storableUrl = createMiddleware(async (c, next) => {
  let path = c.req.path;
  try {
    path = decodeURIComponent(path);
  } catch {} // not percent-encoded UTF-8: the routes answer it as it is
  const problem = storableProblem("path", path) ?? storableProblem("query", c.req.queries());
  if (problem) throw validationFailed([problem]);
  return next();
});

const UPLOAD_PATH = /^\/v2\/sandboxes\/dataplane\/[^/]+\/upload$/;

/** What /openapi.json says the project's auth handler checks: its declared schemes, else a bearer token. */
function customAuthSchemes(config: AgentDeps["config"]): Record<string, Record<string, unknown>> {
  return (
    config.auth?.securitySchemes ?? {
      CustomAuth: {
        type: "http",
        scheme: "bearer",
        description:
          "Checked by the project's auth handler (langgraph.json `auth`). Declare what it really checks " +
          "with `auth.openapi.securitySchemes` in langgraph.json.",
      },
    }
  );
}

/**
 * The HTTP application: request-wide middleware, authentication, then one route module per group;
 * errors mapped in one place. With langgraph.json `http.app`, the project's app is served in front of
 * the built-in routes (custom-app.ts). `http.mount_prefix` is the listener's (mount-prefix.ts).
 */
export function createApp(deps: AgentDeps, log: Logger, custom?: Hono<any>): Hono<AppEnv> {
  const http = deps.config.http;
  const app = new Hono<AppEnv>();
  if (deps.config.mode === "dev" || http.cors) app.use(privateNetworkAccess());
  app.use(corsMiddleware(http.cors));
  app.use(requestBodyLimit(deps.config.maxBodyBytes));
  app.use(storableUrl);
  // The console's terminal sends its credentials as WebSocket subprotocols (a browser sets no headers).
  app.use(consoleWebSocketCredentials);
  // Every row belongs to an organization: the API key's, or the default one when no keys are configured.
  const authentication = [apiKeyAuth({ envKeys: deps.config.apiKeys, repo: deps.storage.auth })];
  if (deps.auth) authentication.push(customAuthentication(deps.auth, { studio: deps.config.mode === "dev" }));
  if (custom && http.app) {
    const builtIns = new Hono<AppEnv>();
    mountBuiltIns(builtIns, deps, log);
    const onError = errorHandler(log);
    builtIns.onError(onError);
    composeCustomApp({
      outer: app,
      custom,
      builtIns,
      authentication,
      authenticated: http.app.authenticated,
      onError,
    });
  } else {
    app.use(...authentication);
    mountBuiltIns(app, deps, log);
  }
  app.onError(errorHandler(log));
  app.notFound(notFoundHandler);
  return app;
}

/** The built-in route groups, less those langgraph.json `http.disable_*` turns off. */
function mountBuiltIns(app: Hono<AppEnv>, deps: AgentDeps, log: Logger): void {
  const http = deps.config.http;
  if (!http.disable_meta) app.route("/", systemRoutes({ sandboxEngine: deps.sandboxRuntime?.engine }));
  if (!http.disable_meta) app.route("/", metricsRoutes(deps));
  if (!http.disable_assistants) app.route("/", assistantRoutes(deps));
  if (!http.disable_threads) app.route("/", threadRoutes(deps));
  if (!http.disable_runs) app.route("/", runRoutes(deps));
  if (!http.disable_runs) app.route("/", cronRoutes(deps)); // crons make runs: they go with the runs group
  if (!http.disable_store) app.route("/", storeRoutes(deps));
  if (!http.disable_a2a) app.route("/", a2aRoutes(deps, log));
  if (!http.disable_mcp) app.route("/", mcpRoutes(deps, log));
  app.route("/v2/sandboxes", sandboxRoutes(deps));
  if (deps.ui) app.route("/", uiRoutes(deps.ui));
  app.route("/", consoleRoutes());
  // The API reference: /openapi.json is built from these routes at the first request.
  app.route("/", docsRoutes(app, deps.auth && customAuthSchemes(deps.config)));
}
