import { createHash, randomBytes } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { type CustomAuth, STUDIO_USER } from "../auth/custom.js";
import { unauthorized } from "../errors.js";
import { type AuthRepo, DEFAULT_ORG } from "../storage/ports.js";
import type { AppEnv } from "./context.js";

export const hashApiKey = (key: string) => createHash("sha256").update(key, "utf8").digest("hex");

/** A new API key: `hgr_` + 256 random bits; `prefix` identifies it in listings. */
export function generateApiKey(): { key: string; prefix: string } {
  const key = `hgr_${randomBytes(32).toString("base64url")}`;
  return { key, prefix: key.slice(0, 12) };
}

/**
 * Routes anyone may read: health, the API reference, the console's page and its assets, and the files of the generative UI
 * bundles (`/ui/<agent>/<file>`: script and link tags cannot send headers; the snippet that names
 * them, `POST /ui/<agent>`, is not public).
 */
export function isPublicRoute(method: string, path: string): boolean {
  if (method !== "GET" && method !== "HEAD") return false;
  return (
    path === "/ok" ||
    path === "/openapi.json" ||
    path === "/docs" ||
    path.startsWith("/docs/") ||
    path === "/console" ||
    path.startsWith("/console/") ||
    UI_FILE.test(path)
  );
}
const UI_FILE = /^\/ui\/[^/]+\/[^/]+$/;
/** A sandbox's data plane: the Studio header is never trusted there (`customAuthentication`). */
const DATA_PLANE = /^\/v2\/sandboxes\/dataplane\//;

/** How long the "are any keys configured?" answer is reused; a key made by the CLI counts within this. */
const KEYS_CONFIGURED_TTL_MS = 1000;

/**
 * API-key authentication. With no key configured (none in HANGAR_API_KEYS, none made with `hangar keys
 * create`) the API is open and every request belongs to the default organization. Otherwise every
 * request but the public routes must carry a valid `X-Api-Key`, and belongs to that key's organization.
 */
export function apiKeyAuth(opts: {
  envKeys: Record<string, string>;
  repo: AuthRepo;
}): MiddlewareHandler<AppEnv> {
  const envOrgByHash = new Map(Object.entries(opts.envKeys).map(([key, org]) => [hashApiKey(key), org]));
  let configured: { value: boolean; until: number } = { value: false, until: 0 };
  const keysConfigured = async () => {
    if (envOrgByHash.size > 0) return true;
    if (Date.now() >= configured.until) {
      configured = {
        value: (await opts.repo.countActiveKeys()) > 0,
        until: Date.now() + KEYS_CONFIGURED_TTL_MS,
      };
    }
    return configured.value;
  };

  return async function authenticate(c, next) {
    if (!(await keysConfigured())) {
      c.set("org", DEFAULT_ORG);
      return next();
    }
    const key = c.req.header("x-api-key");
    if (key) {
      const hash = hashApiKey(key);
      const org = envOrgByHash.get(hash) ?? (await opts.repo.findActiveKey(hash))?.org_id;
      if (org) {
        c.set("org", org);
        return next();
      }
    }
    if (isPublicRoute(c.req.method, c.req.path)) {
      c.set("org", DEFAULT_ORG);
      return next();
    }
    throw unauthorized(key ? "Invalid API key" : "Missing X-Api-Key header: this server requires an API key");
  };
}

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
