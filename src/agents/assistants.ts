import { randomUUID } from "node:crypto";
import { Hono } from "hono";
import type { AuthAction } from "../auth/custom.js";
import { conflict, forbidden, notFound } from "../errors.js";
import { type AppEnv, orgOf } from "../http/context.js";
import { body, params, query } from "../http/validation.js";
import { matchesFilter } from "../storage/filter.js";
import type { Assistant } from "../storage/ports.js";
import { authorize, visible } from "./authz.js";
import { type AgentDeps, pick } from "./context.js";
import * as S from "./schemas.js";

export function assistantRoutes(deps: AgentDeps) {
  const { storage, graphs, runs } = deps;
  /**
   * The assistant named by the path (an assistant id, or a graph id for its default assistant), if this
   * user may `action` it (404 otherwise).
   */
  const load = async (c: Parameters<typeof orgOf>[0], action: AuthAction = "read"): Promise<Assistant> =>
    (await loadFor(c, action, {})).assistant;
  /** `load`, and what the request would change as the handler left it. */
  const loadFor = async <V extends object>(c: Parameters<typeof orgOf>[0], action: AuthAction, value: V) => {
    const { assistant_id } = params(c, S.AssistantPath);
    const found = await runs.assistant(orgOf(c), assistant_id).catch(() => null);
    const { row, value: changed } = await visible(deps, c, "assistants", action, assistant_id, found, value);
    return { assistant: row, value: changed };
  };

  return new Hono<AppEnv>()
    .post("/assistants", async (c) => {
      const b = await body(c, S.AssistantCreate);
      if (!graphs.has(b.graph_id)) throw notFound(`Graph "${b.graph_id}" not found`);
      // The handler may stamp the metadata; an existing assistant it may not see is a conflict.
      const { filter, value } = await authorize(deps, c, "assistants", "create", {
        assistant_id: b.assistant_id ?? randomUUID(),
        graph_id: b.graph_id,
        name: b.name ?? "Untitled",
        description: b.description ?? null,
        config: b.config ?? {},
        context: b.context ?? {},
        metadata: b.metadata ?? {},
        if_exists: b.if_exists ?? "raise",
      });
      const { if_exists, ...input } = value;
      const assistant = await storage.assistants.create(orgOf(c), input, if_exists);
      if (!matchesFilter(assistant.metadata, filter))
        throw conflict(`Assistant ${input.assistant_id} already exists`);
      return c.json(assistant);
    })
    .post("/assistants/search", async (c) => {
      const b = await body(c, S.AssistantSearch);
      const q = {
        ...b,
        graph_id: b.graph_id ?? undefined,
        name: b.name ?? undefined,
        metadata: b.metadata ?? undefined,
        auth: (await authorize(deps, c, "assistants", "search", b)).filter,
      };
      const { items, total } = await storage.assistants.search(orgOf(c), q);
      c.header("X-Pagination-Total", String(total));
      if (b.offset + items.length < total) c.header("X-Pagination-Next", String(b.offset + items.length));
      return c.json(pick(items, b.select));
    })
    .post("/assistants/count", async (c) => {
      const b = await body(c, S.AssistantCount);
      return c.json(
        await storage.assistants.count(orgOf(c), {
          auth: (await authorize(deps, c, "assistants", "search", b)).filter,
          graph_id: b.graph_id ?? undefined,
          name: b.name ?? undefined,
          metadata: b.metadata ?? undefined,
        }),
      );
    })
    .get("/assistants/:assistant_id", async (c) => c.json(await load(c)))
    .patch("/assistants/:assistant_id", async (c) => {
      const b = await body(c, S.AssistantPatch);
      const patch = {
        graph_id: b.graph_id ?? undefined,
        name: b.name ?? undefined,
        description: b.description,
        config: b.config ?? undefined,
        context: b.context ?? undefined,
        metadata: b.metadata ?? undefined,
      };
      // The handler sees the patch and may change it (its metadata, say).
      const { assistant, value } = await loadFor(c, "update", patch);
      const { assistant_id } = assistant;
      if (value.graph_id && !graphs.has(value.graph_id))
        throw notFound(`Graph "${value.graph_id}" not found`);
      const updated = await storage.assistants.update(orgOf(c), assistant_id, value);
      if (!updated) throw notFound(`Assistant ${assistant_id} not found`);
      return c.json(updated);
    })
    .delete("/assistants/:assistant_id", async (c) => {
      const { assistant_id } = await load(c, "delete");
      const { delete_threads } = query(c, S.AssistantDeleteQuery);
      if (delete_threads && deps.auth) {
        // Its threads go too: every one of them must be this user's to delete.
        const { filter } = await authorize(deps, c, "threads", "delete", { assistant_id });
        const ofAssistant = { metadata: { assistant_id } };
        if (filter) {
          const [all, own] = await Promise.all([
            storage.threads.count(orgOf(c), ofAssistant),
            storage.threads.count(orgOf(c), { ...ofAssistant, auth: filter }),
          ]);
          if (all !== own) throw forbidden("Some threads of this assistant are not yours to delete");
        }
      }
      await runs.deleteAssistant(orgOf(c), assistant_id, delete_threads);
      return c.json([assistant_id]);
    })
    .post("/assistants/:assistant_id/versions", async (c) => {
      const { assistant_id } = await load(c);
      const b = await body(c, S.AssistantVersions);
      return c.json(
        await storage.assistants.versions(orgOf(c), assistant_id, {
          metadata: b.metadata ?? undefined,
          limit: b.limit,
          offset: b.offset,
        }),
      );
    })
    .post("/assistants/:assistant_id/latest", async (c) => {
      const { version } = await body(c, S.AssistantLatest);
      const { assistant_id } = (await loadFor(c, "update", { version })).assistant;
      const updated = await storage.assistants.setLatest(orgOf(c), assistant_id, version);
      if (!updated) throw notFound(`Assistant ${assistant_id} has no version ${version}`);
      return c.json(updated);
    })
    .get("/assistants/:assistant_id/schemas", async (c) => {
      const assistant = await load(c);
      return c.json(await graphs.schemas(assistant.graph_id, assistant.config, { fromSource: true }));
    })
    .get("/assistants/:assistant_id/graph", async (c) => {
      const assistant = await load(c);
      const { xray } = query(c, S.GraphQuery);
      const graph = await graphs.get(assistant.graph_id, assistant.config);
      const drawable = await graph.getGraphAsync({ ...assistant.config, xray });
      return c.json(drawable.toJSON());
    })
    .get("/assistants/:assistant_id/subgraphs/:namespace?", async (c) => {
      const assistant = await load(c);
      const { recurse } = query(c, S.SubgraphsQuery);
      const namespace = c.req.param("namespace");
      return c.json(await graphs.subgraphSchemas(assistant.graph_id, assistant.config, namespace, recurse));
    });
}
