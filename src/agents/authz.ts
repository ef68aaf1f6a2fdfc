/**
 * Authorization in the routes: each operation raises its `<resource>:<action>` event with the project's
 * handlers (src/auth/custom.ts) and acts only on what the answer allows. A filter hides every resource
 * whose metadata does not match: searches and counts pass it to storage (`auth` in the queries), and a
 * resource fetched by id that does not match answers 404, exactly as if it did not exist.
 * Without langgraph.json `auth`, every function here allows everything at no cost.
 */
import type { Context } from "hono";
import type { AuthAction, AuthContext, Authorization, AuthResource } from "../auth/custom.js";
import { matchesFilter } from "../auth/filter.js";
import { notFound } from "../errors.js";
import { defaultAssistantId } from "../runtime/graphs.js";
import type { Assistant, Cron, Thread } from "../storage/ports.js";
import { type AgentDeps, type AppEnv, orgOf } from "./context.js";

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

/**
 * The thread `threadId` if this user may `action` it: 404 when it is absent, of another organization,
 * or hidden from this user by the handler's filter.
 */
export async function visibleThread(
  deps: Pick<AgentDeps, "auth" | "storage">,
  c: C,
  threadId: string,
  action: AuthAction,
  value: Record<string, unknown> = {},
): Promise<Thread> {
  const { filter } = await authorize(deps, c, "threads", action, { thread_id: threadId, ...value });
  const thread = await deps.storage.threads.get(orgOf(c), threadId);
  if (!thread || !matchesFilter(thread.metadata, filter)) throw notFound(`Thread ${threadId} not found`);
  return thread;
}

/**
 * The assistant (by id) if this user may `action` it (404 as for threads), and `value` (what the
 * request would change) as the handler left it.
 */
export async function visibleAssistant<V extends object>(
  deps: Pick<AgentDeps, "auth" | "storage">,
  c: C,
  assistant: Assistant | null,
  assistantId: string,
  action: AuthAction,
  value: V,
): Promise<{ assistant: Assistant; value: V }> {
  const asked = await authorize(deps, c, "assistants", action, { assistant_id: assistantId, ...value });
  if (!assistant || !matchesFilter(assistant.metadata, asked.filter))
    throw notFound(`Assistant ${assistantId} not found`);
  const { assistant_id: _, ...changed } = asked.value;
  return { assistant, value: changed as unknown as V };
}

/**
 * The assistant a run (or cron, or A2A message) names, if this user may read it: a default assistant
 * (a graph's) is everyone's; another one must pass `assistants:read`'s filter, else it is unknown — the
 * same 404 as an id that names nothing, so a hidden assistant can be neither used nor detected.
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

/**
 * The cron if this user may `action` it (404 as for threads), and `value` (what the request would
 * change) as the handler left it.
 */
export async function visibleCron<V extends object>(
  deps: Pick<AgentDeps, "auth">,
  c: C,
  cron: Cron | null,
  cronId: string,
  action: AuthAction,
  value: V,
): Promise<{ cron: Cron; value: V }> {
  const asked = await authorize(deps, c, "crons", action, { cron_id: cronId, ...value });
  if (!cron || !matchesFilter(cron.metadata, asked.filter)) throw notFound(`Cron ${cronId} not found`);
  const { cron_id: _, ...changed } = asked.value;
  return { cron, value: changed as unknown as V };
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
