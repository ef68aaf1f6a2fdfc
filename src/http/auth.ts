import { createHash, randomBytes } from "node:crypto";
import type { MiddlewareHandler } from "hono";
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
