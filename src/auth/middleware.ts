/**
 * The project's auth handler as HTTP middleware (langgraph.json `auth`); API keys are the HTTP kit's
 * (http/auth.ts), run before it.
 */
import type { MiddlewareHandler } from "hono";
import { isPublicRoute } from "../http/auth.js";
import type { AppEnv } from "../http/context.js";
import { type AuthContext, type CustomAuth, STUDIO_USER } from "./custom.js";

declare module "../http/context.js" {
  interface RequestVariables {
    /** The user the project's auth handler authenticated, when langgraph.json has `auth`. */
    auth?: AuthContext;
  }
}

/** A sandbox's data plane: the Studio header is never trusted there (`customAuthentication`). */
const DATA_PLANE = /^\/v2\/sandboxes\/dataplane\//;

/**
 * Custom authentication (langgraph.json `auth`): every request but the public routes, `/info` and
 * `/metrics` (server-wide figures with no user's data, read by scrapers that cannot log in) runs the
 * project's `authenticate` handler, and its user is the request's (`c.get("auth")`). It runs after the
 * API key, which selects the organization: the handler selects the user within it. LangGraph Studio's
 * requests (`x-auth-scheme: langsmith`) act as the Studio user in `hangar dev` unless
 * `disable_studio_auth`; `hangar serve` has no LangSmith to vouch for them, so they authenticate as any.
 * The Studio user is a user like any other to the handlers (they see it and decide what it may do), and
 * the header is never taken on a sandbox's data plane (commands, files: Studio has no use for them, and
 * a page a browser opens could send the header): there the handler must authenticate the request.
 */
export function customAuthentication(auth: CustomAuth, opts: { studio: boolean }): MiddlewareHandler<AppEnv> {
  return async function authenticateUser(c, next) {
    if (isPublicRoute(c.req.method, c.req.path) || c.req.path === "/info" || c.req.path === "/metrics")
      return next();
    const studio = opts.studio && auth.studioAuth && c.req.header("x-auth-scheme") === "langsmith";
    if (studio && !DATA_PLANE.test(c.req.path)) {
      c.set("auth", { user: STUDIO_USER, permissions: [] });
      return next();
    }
    const ctx = await auth.authenticate(c.req.raw);
    if (ctx) c.set("auth", ctx);
    return next();
  };
}
