/**
 * Authorization in the routes: each operation raises its `<resource>:<action>` event with the project's
 * handlers (src/auth/custom.ts) and acts only on what the answer allows. A filter hides every resource
 * whose metadata does not match: searches and counts pass it to storage (`auth` in the queries), and a
 * resource fetched by id that does not match answers 404, exactly as if it did not exist.
 * Without langgraph.json `auth`, every function here allows everything at no cost.
 */
import type { Context } from "hono";
import type { AuthAction, AuthContext, Authorization, AuthResource } from "../auth/custom.js";
import { notFound } from "../errors.js";
import { type AppEnv, orgOf } from "../http/context.js";
import { defaultAssistantId } from "../runtime/graphs/graphs.js";
import { matchesFilter } from "../storage/filter.js";
import type { Assistant, Thread } from "../storage/ports.js";
import type { AgentDeps } from "./context.js";

type C = Context<AppEnv>;

/** Runs the handler for `resource:action` with `value` (which it may change); 403 when it refuses. */
export async function authorize<V>(
  deps: Pick<AgentDeps, "auth">,
  c: C,
  resource: AuthResource,
  action: AuthAction,
  value: V,
): Promise<Authorization<V>> {
  if (!deps.auth) return { value };
  return deps.auth.authorize(c.get("auth"), resource, action, value);
}

/** How each resource fetched by id is named: its id field, and the word its 404 uses. */
const BY_ID = {
  threads: { key: "thread_id", noun: "Thread" },
  assistants: { key: "assistant_id", noun: "Assistant" },
  crons: { key: "cron_id", noun: "Cron" },
} as const;

/**
 * A resource fetched by id (`row`, null when absent) if this user may `action` it — 404 when it is
 * absent, of another organization, or hidden by the handler's filter — and `value` (what the request
 * would change) as the handler left it.
 */
export async function visible<R extends { metadata: Record<string, unknown> }, V extends object>(
  deps: Pick<AgentDeps, "auth">,
  c: C,
  resource: keyof typeof BY_ID,
  action: AuthAction,
  id: string,
  row: R | null,
  value: V,
): Promise<{ row: R; value: V }> {
  const { key, noun } = BY_ID[resource];
  const asked = await authorize(deps, c, resource, action, { [key]: id, ...value });
  if (!row || !matchesFilter(row.metadata, asked.filter)) throw notFound(`${noun} ${id} not found`);
  const { [key]: _, ...changed } = asked.value as Record<string, unknown>;
  return { row, value: changed as V };
}

/** The thread `threadId` if this user may `action` it (see `visible`). */
export async function visibleThread(
  deps: Pick<AgentDeps, "auth" | "storage">,
  c: C,
  threadId: string,
  action: AuthAction,
  value: Record<string, unknown> = {},
): Promise<Thread> {
  const thread = await deps.storage.threads.get(orgOf(c), threadId);
  return (await visible(deps, c, "threads", action, threadId, thread, value)).row;
}

/**
 * The assistant a run (or cron, or A2A message, or agent card) names, if this user may use it: a default
 * assistant (a graph's) is everyone's; another one must pass `assistants:read`'s filter, else it is
 * unknown — the same 404 as an id that names nothing, so a hidden assistant can be neither used nor
 * detected. Without custom auth nothing is checked.
 */
export async function usableAssistant(
  deps: Pick<AgentDeps, "auth" | "runs">,
  org: string,
  access: Access,
  idOrGraph: string,
): Promise<Assistant> {
  const assistant = await deps.runs.assistant(org, idOrGraph);
  if (!deps.auth || assistant.assistant_id === defaultAssistantId(assistant.graph_id)) return assistant;
  const { filter } = await access.authorize("assistants", "read", { assistant_id: assistant.assistant_id });
  if (!matchesFilter(assistant.metadata, filter)) throw deps.runs.unknownAssistant(idOrGraph);
  return assistant;
}

/** `usableAssistant` for run creation, which resolves the assistant itself: nothing is read without custom auth. */
export async function assertUsableAssistant(
  deps: Pick<AgentDeps, "auth" | "runs">,
  org: string,
  access: Access,
  idOrGraph: string,
): Promise<void> {
  if (deps.auth) await usableAssistant(deps, org, access, idOrGraph);
}

/** A request's user and authorization, for services that act for it outside the route (A2A, MCP). */
export interface Access {
  user?: AuthContext;
  authorize<V>(resource: AuthResource, action: AuthAction, value: V): Promise<Authorization<V>>;
}

export const accessOf = (deps: Pick<AgentDeps, "auth">, c: C): Access => ({
  user: c.get("auth"),
  authorize: (resource, action, value) => authorize(deps, c, resource, action, value),
});

/** Everything allowed: internal callers, and servers without langgraph.json `auth`. */
export const OPEN_ACCESS: Access = { authorize: async (_r, _a, value) => ({ value }) };
