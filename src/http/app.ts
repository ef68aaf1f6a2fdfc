import { type Context, Hono, type MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { cors } from "hono/cors";
import { createMiddleware } from "hono/factory";
import type { Config, CorsConfig } from "../config/index.js";
import { validationFailed } from "../errors.js";
import type { Logger } from "../logger.js";
import type { AppEnv } from "./context.js";
import { composeCustomApp } from "./custom-app.js";
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
 * Bodies larger than the limit get 413 before anything reads them. Paths that match `unlimited` take
 * files, not requests to store (uploads to a sandbox: they stream into it under a limit of their own,
 * counted as they arrive, HANGAR_SANDBOX_MAX_UPLOAD_MB). A request with a `Content-Length` (or, in
 * HTTP/1.1, with no length and no chunked encoding: no body) is judged by its headers here; only a
 * chunked body goes through Hono's `bodyLimit`, which counts it as it is read. (`bodyLimit` looks at
 * the request's body first, which makes the Node adapter build a whole web `Request` for every request,
 * GETs included: 6 % of the API thread's CPU under load.)
 */
function requestBodyLimit(maxBytes: number, unlimited: RegExp | undefined) {
  const tooLarge = (c: Context) =>
    c.json(
      { detail: `Request body larger than ${maxBytes / 1024 / 1024} MiB (the limit, HANGAR_MAX_BODY_MB)` },
      413,
    );
  const countChunked = bodyLimit({ maxSize: maxBytes, onError: tooLarge });
  return createMiddleware(async (c, next) => {
    if (unlimited?.test(c.req.path)) return next();
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

export interface AppOptions {
  config: Pick<Config, "mode" | "http" | "maxBodyBytes">;
  log: Logger;
  /** Paths whose bodies are files that stream under a limit of their own, not `maxBodyBytes`. */
  unlimitedBodies?: RegExp;
  /** Request-wide middleware that runs before authentication. */
  before?: MiddlewareHandler<AppEnv>[];
  /** Sets the request's organization (and user); every route but the public ones needs it. */
  authentication: MiddlewareHandler<AppEnv>[];
  /** Mounts the route groups on the app it is given. */
  mountRoutes: (app: Hono<AppEnv>) => void;
  /** langgraph.json `http.app`: the project's Hono app, served in front of the routes (custom-app.ts). */
  custom?: Hono<any>;
}

/**
 * The HTTP application: request-wide middleware, authentication, then the route groups the caller
 * mounts; errors mapped in one place. With langgraph.json `http.app`, the project's app is served in
 * front of the routes (custom-app.ts). `http.mount_prefix` is the listener's (mount-prefix.ts).
 */
export function createApp(opts: AppOptions): Hono<AppEnv> {
  const { config, log, authentication, mountRoutes, custom } = opts;
  const http = config.http;
  const app = new Hono<AppEnv>();
  if (config.mode === "dev" || http.cors) app.use(privateNetworkAccess());
  app.use(corsMiddleware(http.cors));
  app.use(requestBodyLimit(config.maxBodyBytes, opts.unlimitedBodies));
  app.use(storableUrl);
  if (opts.before?.length) app.use(...opts.before);
  if (custom && http.app) {
    const builtIns = new Hono<AppEnv>();
    mountRoutes(builtIns);
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
    mountRoutes(app);
  }
  app.onError(errorHandler(log));
  app.notFound(notFoundHandler);
  return app;
}
