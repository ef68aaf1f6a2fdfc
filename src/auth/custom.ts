/**
 * Custom authentication and authorization: the project's `Auth` instance (`@langchain/langgraph-sdk/auth`)
 * named by langgraph.json `auth.path`, with the LangGraph servers' semantics (README "Custom auth").
 *
 * - `authenticate(request)` turns a request into the user (`AuthContext`), or throws `authFailed`.
 * - `authorize(ctx, "threads", "read", value)` runs the most specific `on` handler and answers the
 *   filter that resource must match for this user (or throws `forbidden`); the handler may change `value`.
 *
 * Nothing here knows HTTP statuses: it throws domain errors (`src/errors.ts`).
 */
import type { AuthSpec } from "../config/index.js";
import { forbidden, StatusError } from "../errors.js";
import { importProjectExport } from "../runtime/graphs/project-module.js";
import { type AuthFilter, filterProblem } from "../storage/filter.js";

export type { AuthFilter } from "../storage/filter.js";

/** The user a request acts as: what the handler returned, normalised as the LangGraph servers do. */
export interface AuthUser {
  identity: string;
  display_name: string;
  is_authenticated: boolean;
  permissions: string[];
  [key: string]: unknown;
}

export interface AuthContext {
  user: AuthUser;
  permissions: string[];
}

/**
 * The resources handlers see: the LangGraph servers' four, and the sandbox area's (README "Custom
 * auth"): `sandboxes`, `volumes`, `templates` and `pools`, with `create|read|update|delete|search`,
 * and `sandboxes:exec` for a sandbox's data plane.
 */
export type AuthResource =
  | "assistants"
  | "threads"
  | "crons"
  | "store"
  | "sandboxes"
  | "volumes"
  | "templates"
  | "pools";
export type AuthAction =
  | "create"
  | "read"
  | "update"
  | "delete"
  | "search"
  | "create_run"
  | "put"
  | "get"
  | "list_namespaces"
  | "exec";

/** What the handler decided: `filter` undefined = everything it may see; `value` possibly changed. */
export interface Authorization<V> {
  filter?: AuthFilter;
  value: V;
}

/** The user LangGraph Studio requests act as in `hangar dev` (the reference dev server's). */
export const STUDIO_USER: AuthUser = Object.freeze({
  kind: "StudioUser",
  identity: "langgraph-studio-user",
  display_name: "langgraph-studio-user",
  is_authenticated: true,
  permissions: [],
}) as AuthUser;

type Handler = (request: unknown) => unknown;
interface HandlerCache {
  authenticate?: Handler;
  callbacks?: Record<string, Handler>;
}

/** An `HTTPException` of the SDK (or anything shaped like it): a status the handler chose. */
function asHttpException(
  err: unknown,
): { status: number; message: string; headers: Record<string, string> } | null {
  if (typeof err !== "object" || err === null) return null;
  const e = err as { status?: unknown; message?: unknown; headers?: unknown };
  if (typeof e.status !== "number" || e.status < 400 || e.status > 599 || !("headers" in e)) return null;
  const headers: Record<string, string> = {};
  const raw = e.headers instanceof Headers ? Object.fromEntries(e.headers.entries()) : e.headers;
  if (raw && typeof raw === "object")
    for (const [k, v] of Object.entries(raw as object)) if (typeof v === "string") headers[k] = v;
  return { status: e.status, message: typeof e.message === "string" ? e.message : "", headers };
}

/** The error a handler's own HTTPException becomes: its status, message and headers, answered as they are. */
export class AuthHandlerError extends StatusError {
  constructor(status: number, message: string, headers: Record<string, string>) {
    super("unauthorized", status, message, headers);
  }
}

export class AuthLoadError extends Error {
  override name = "AuthLoadError";
}

export class CustomAuth {
  readonly #handlers: HandlerCache;
  readonly studioAuth: boolean;

  private constructor(handlers: HandlerCache, studioAuth: boolean) {
    this.#handlers = handlers;
    this.studioAuth = studioAuth;
  }

  /** Imports the project's auth module; a bad path or export stops start-up with a clear error. */
  static async load(spec: AuthSpec): Promise<CustomAuth> {
    const where = `auth (${spec.file}:${spec.exportName})`;
    let exported: unknown;
    try {
      exported = await importProjectExport(spec.file, spec.exportName);
    } catch (err) {
      throw new AuthLoadError(`Failed to load ${where}: ${(err as Error).message ?? err}`);
    }
    const handlers = (exported as { "~handlerCache"?: HandlerCache } | null)?.["~handlerCache"];
    if (typeof handlers !== "object" || handlers === null) {
      throw new AuthLoadError(
        `Failed to load ${where}: the export is not an Auth instance (new Auth() from "@langchain/langgraph-sdk/auth")`,
      );
    }
    if (!handlers.authenticate && Object.keys(handlers.callbacks ?? {}).length > 0) {
      // Without a user, no handler could ever run: the project would be open while it looks guarded.
      throw new AuthLoadError(
        `Failed to load ${where}: it has authorization (on) handlers but no authenticate handler, so they would never run; add .authenticate(...)`,
      );
    }
    return new CustomAuth(handlers, !spec.disableStudioAuth);
  }

  get authenticates(): boolean {
    return typeof this.#handlers.authenticate === "function";
  }

  /**
   * The request's user. An `HTTPException` the handler throws keeps its status, message and headers;
   * any other failure (a bug, a malformed result) is a 401, so a broken handler never opens the API.
   */
  async authenticate(request: Request): Promise<AuthContext | undefined> {
    const handler = this.#handlers.authenticate;
    if (!handler) return undefined;
    let result: unknown;
    try {
      result = await handler(request);
    } catch (err) {
      const http = asHttpException(err);
      if (http) throw new AuthHandlerError(http.status, http.message || "Unauthorized", http.headers);
      throw new AuthHandlerError(401, "Unauthorized", {});
    }
    if (typeof result === "string" && result !== "") {
      const user: AuthUser = {
        identity: result,
        display_name: result,
        is_authenticated: true,
        permissions: [],
      };
      return { user, permissions: [] };
    }
    if (typeof result === "object" && result !== null && typeof (result as AuthUser).identity === "string") {
      const r = result as Partial<AuthUser>;
      const permissions = Array.isArray(r.permissions)
        ? r.permissions.filter((p) => typeof p === "string")
        : [];
      const user: AuthUser = {
        ...(r as object),
        identity: r.identity as string,
        permissions,
        is_authenticated: r.is_authenticated ?? true,
        display_name: typeof r.display_name === "string" ? r.display_name : (r.identity as string),
      };
      return { user, permissions };
    }
    throw new AuthHandlerError(401, "Unauthorized", {});
  }

  /**
   * Runs the handler for `resource:action` (lookup: `resource:action`, `resource`, `*:action`, `*`).
   * `undefined`/`true` allow everything; `false` is forbidden; an object is the filter resources must
   * match for this user. A handler that throws its own HTTPException answers with it; any other error,
   * or a result of another type, is forbidden (never a 500, never allowed by accident).
   */
  async authorize<V>(
    ctx: AuthContext | undefined,
    resource: AuthResource,
    action: AuthAction,
    value: V,
  ): Promise<Authorization<V>> {
    const callbacks = this.#handlers.callbacks ?? {};
    const key = [`${resource}:${action}`, resource, `*:${action}`, "*"].find((k) => callbacks[k]);
    if (!key || !ctx) return { value };
    let result: unknown;
    try {
      result = await callbacks[key]!({
        event: `${resource}:${action}`,
        resource,
        action,
        value,
        user: ctx.user,
        permissions: ctx.permissions,
      });
    } catch (err) {
      const http = asHttpException(err);
      if (http) throw new AuthHandlerError(http.status, http.message || "Forbidden", http.headers);
      throw forbidden(`The authorization handler for ${resource}:${action} failed`);
    }
    if (result === undefined || result === null || result === true) return { value };
    if (result === false) throw forbidden("Forbidden");
    // Only a plain object is a filter: a Map, an array or a class instance would read as "no condition".
    const plain = typeof result === "object" && Object.getPrototypeOf(result) === Object.prototype;
    const problem = plain ? filterProblem(result as object) : "not a plain object";
    if (problem) {
      throw forbidden(
        `The authorization handler for ${resource}:${action} returned an invalid filter (${problem}); expected a filter object, true, false or nothing`,
      );
    }
    return { filter: result as AuthFilter, value };
  }
}
