/** What every request carries through the middleware, for any route module. */
import type { Context } from "hono";
import type { AuthContext } from "../auth/custom.js";
import type { OrgId } from "../storage/ports.js";

/**
 * Hono environment: `org` is set once per request (by the API key, or to the default organization);
 * `auth` is the user the project's auth handler authenticated, when langgraph.json has `auth`.
 */
export type AppEnv = { Variables: { org: OrgId; auth?: AuthContext } };

export const orgOf = (c: Context<AppEnv>): OrgId => c.get("org");
