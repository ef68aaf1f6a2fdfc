import type { Context } from "hono";
import type { Config } from "../config/index.js";
import type { GraphRegistry } from "../runtime/graphs.js";
import type { RunService } from "../runtime/runs.js";
import type { OrgId, Storage } from "../storage/ports.js";

/** What the agent-server routes need, passed in when the app is built (no module singletons). */
export interface AgentDeps {
  config: Config;
  storage: Storage;
  graphs: GraphRegistry;
  runs: RunService;
}

/** Hono environment: `org` is set once per request (by auth, or to the default organization). */
export type AppEnv = { Variables: { org: OrgId } };

export const orgOf = (c: Context<AppEnv>): OrgId => c.get("org");

/** Keeps only the requested fields of each item (`select` in search bodies). */
export function pick<T extends object>(items: T[], fields: string[] | null | undefined): Partial<T>[] {
  if (!fields?.length) return items;
  return items.map(
    (item) =>
      Object.fromEntries(fields.filter((f) => f in item).map((f) => [f, (item as any)[f]])) as Partial<T>,
  );
}
