/**
 * langgraph.json `http.app`: the project's own Hono app, served in front of the built-in routes as the
 * LangGraph servers do. Its routes answer first; its middleware (`app.use`) also wraps the built-in
 * routes, so it can read and rewrite their requests and responses; its `notFound` and `onError` apply
 * to what none of the routes answers. Hono copies routes, not the not-found handler, into another
 * app, so the project's app is the one that dispatches: the built-in routes are appended to it.
 *
 * Authentication (API keys, the auth handler) runs either before the whole app (`authenticated`, the
 * default, as under `langgraph dev`), handing what it learned (the organization, the user) over to the
 * built-in routes; or after the app's middleware, in front of the built-in routes only.
 */
import { type Context, type ErrorHandler, Hono, type MiddlewareHandler } from "hono";
import type { CustomAppSpec } from "../config/index.js";
import type { AppEnv } from "./context.js";

export class CustomAppLoadError extends Error {
  override name = "CustomAppLoadError";
}

/** The request variables authentication set, handed from the outer app to the project's. */
const AUTHENTICATED_VARS = Symbol("hangar.authenticatedVars");

/**
 * The project's app, imported by `importExport` (the server's loader of project modules) and checked to
 * be a Hono app (anything with Hono's routing surface).
 */
export async function loadCustomApp(
  spec: CustomAppSpec,
  importExport: (file: string, exportName: string) => Promise<unknown>,
): Promise<Hono<any>> {
  const where = `http.app (${spec.file}:${spec.exportName})`;
  let exported: unknown;
  try {
    exported = await importExport(spec.file, spec.exportName);
  } catch (err) {
    throw new CustomAppLoadError(`Failed to load ${where}: ${(err as Error).message ?? err}`);
  }
  const app = exported as Partial<Hono> | null;
  if (typeof app?.fetch !== "function" || typeof app.route !== "function" || !Array.isArray(app.routes)) {
    throw new CustomAppLoadError(
      `Failed to load ${where}: the export is not a Hono app (new Hono() from "hono")`,
    );
  }
  return app as Hono<any>;
}

/**
 * Composes the project's app with Hangar's: `outer` has the request-wide middleware (CORS, limits) and,
 * when the app is authenticated, authentication; it then hands every request to the project's app, to
 * which `builtIns` (the built-in routes, with their error mapping `onError`) are appended.
 */
export function composeCustomApp(opts: {
  outer: Hono<AppEnv>;
  custom: Hono<any>;
  builtIns: Hono<AppEnv>;
  authentication: MiddlewareHandler<AppEnv>[];
  authenticated: boolean;
  onError: ErrorHandler<AppEnv>;
}): void {
  const { outer, custom, builtIns, authentication, authenticated, onError } = opts;
  const entry = new Hono<AppEnv>();
  if (authenticated) {
    outer.use(...authentication);
    entry.use(adoptAuthenticatedVars);
  } else {
    entry.use(...authentication);
  }
  entry.route("/", builtIns);
  entry.onError(onError); // authentication's own failures (after the app's middleware)
  custom.route("/", entry);
  outer.all("*", (c) => custom.fetch(c.req.raw, withVars(c)));
}

function withVars(c: Context<AppEnv>): unknown {
  return { ...(c.env as object), [AUTHENTICATED_VARS]: c.var };
}

/** The built-in routes read the organization and user from their own context: copied from the outer one. */
const adoptAuthenticatedVars: MiddlewareHandler<AppEnv> = async (c, next) => {
  const vars = (c.env as Record<symbol, Record<string, unknown>> | undefined)?.[AUTHENTICATED_VARS];
  if (vars)
    for (const [key, value] of Object.entries(vars)) c.set(key as keyof AppEnv["Variables"], value as never);
  await next();
};
