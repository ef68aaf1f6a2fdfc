/** What every request carries through the middleware, for any route module. */
import type { Context } from "hono";
import type { OrgId } from "../storage/ports.js";

/**
 * The request's variables: `org` is set once per request (by the API key, or to the default
 * organization). Middleware that sets more declares them where it sets them (`declare module`), as
 * auth/middleware.ts does for the user the project's auth handler authenticated.
 */
export interface RequestVariables {
  org: OrgId;
}

export type AppEnv = { Variables: RequestVariables };

export const orgOf = (c: Context<AppEnv>): OrgId => c.get("org");
