import { randomUUID } from "node:crypto";
import { Hono } from "hono";
import type { AuthAction } from "../auth/custom.js";
import { conflict, notFound } from "../errors.js";
import { type AppEnv, orgOf } from "../http/context.js";
import { body, params, query } from "../http/validation.js";
import { matchesFilter } from "../storage/filter.js";
import type { JsonObject, Thread } from "../storage/ports.js";
import { authorize, visible, visibleThread } from "./authz.js";
import { type AgentDeps, pick } from "./context.js";
import * as S from "./schemas.js";

export function threadRoutes(deps: AgentDeps) {
  const { storage, runs, state } = deps;
  /** The path's thread, if this user may `action` it (404 otherwise). */
  const load = async (c: Parameters<typeof orgOf>[0], action: AuthAction = "read"): Promise<Thread> =>
    visibleThread(deps, c, params(c, S.ThreadPath).thread_id, action);

  /** `threads:update` of a patch: the thread must be visible; the handler may change the metadata. */
  const updateThread = async (c: Parameters<typeof orgOf>[0], threadId: string, metadata: JsonObject) => {
    const thread = await storage.threads.get(orgOf(c), threadId);
    return (await visible(deps, c, "threads", "update", threadId, thread, { metadata })).value;
  };

  return new Hono<AppEnv>()
    .post("/threads", async (c) => {
      const b = await body(c, S.ThreadCreate);
      const org = orgOf(c);
      // The handler may stamp the metadata (an owner); an existing thread it may not see is a conflict.
      const { filter, value } = await authorize(deps, c, "threads", "create", {
        thread_id: b.thread_id ?? randomUUID(),
        metadata: b.metadata ?? {},
        if_exists: b.if_exists ?? "raise",
      });
      const ttl = b.ttl ?? deps.config.threadTtl.default;
      const thread = await storage.threads.create(
        org,
        { thread_id: value.thread_id, metadata: value.metadata, ...(ttl && { ttl }) },
        value.if_exists,
      );
      if (!matchesFilter(thread.metadata, filter)) throw conflict(`Thread ${value.thread_id} already exists`);
      if (b.supersteps?.length) {
        await state.applySupersteps(org, thread, b.supersteps);
        return c.json(await storage.threads.get(org, thread.thread_id));
      }
      return c.json(thread);
    })
    .post("/threads/search", async (c) => {
      const b = await body(c, S.ThreadSearch);
      const { filter } = await authorize(deps, c, "threads", "search", b);
      const { items, total } = await storage.threads.search(orgOf(c), {
        ...b,
        auth: filter,
        ids: b.ids ?? undefined,
        metadata: b.metadata ?? undefined,
        values: b.values ?? undefined,
        status: b.status ?? undefined,
      });
      c.header("X-Pagination-Total", String(total));
      if (b.offset + items.length < total) c.header("X-Pagination-Next", String(b.offset + items.length));
      return c.json(pick(items, b.select));
    })
    .post("/threads/count", async (c) => {
      const b = await body(c, S.ThreadCount);
      const { filter } = await authorize(deps, c, "threads", "search", b);
      return c.json(
        await storage.threads.count(orgOf(c), {
          auth: filter,
          metadata: b.metadata ?? undefined,
          values: b.values ?? undefined,
          status: b.status ?? undefined,
        }),
      );
    })
    .get("/threads/:thread_id", async (c) => c.json(await load(c)))
    .patch("/threads/:thread_id", async (c) => {
      const { thread_id } = params(c, S.ThreadPath);
      const b = await body(c, S.ThreadPatch);
      const { metadata } = await updateThread(c, thread_id, b.metadata ?? {});
      const thread = await storage.threads.patch(orgOf(c), thread_id, metadata, b.ttl);
      if (!thread) throw notFound(`Thread ${thread_id} not found`);
      return c.json(thread);
    })
    .delete("/threads/:thread_id", async (c) => {
      const { thread_id } = await load(c, "delete");
      await runs.deleteThread(orgOf(c), thread_id);
      return c.body(null, 204);
    })
    .post("/threads/:thread_id/copy", async (c) => {
      const { thread_id } = params(c, S.ThreadPath);
      // A thread this user may not read cannot be copied: 409, as the reference answers.
      const { filter } = await authorize(deps, c, "threads", "read", { thread_id });
      const source = await storage.threads.get(orgOf(c), thread_id);
      if (!source) throw notFound(`Thread ${thread_id} not found`);
      if (!matchesFilter(source.metadata, filter)) throw conflict(`Thread ${thread_id} cannot be copied`);
      // The copy is a new thread of this user's: `threads:create` may refuse it (403) or stamp its owner.
      const created = await authorize(deps, c, "threads", "create", {
        thread_id: randomUUID(),
        metadata: { ...source.metadata },
        if_exists: "raise" as const,
      });
      const copy = await storage.threads.copy(
        orgOf(c),
        thread_id,
        created.value.thread_id,
        created.value.metadata,
      );
      if (!copy) throw notFound(`Thread ${thread_id} not found`);
      return c.json(copy);
    })
    .get("/threads/:thread_id/state", async (c) => {
      const thread = await load(c);
      const { subgraphs } = query(c, S.StateQuery);
      return c.json(await state.get(orgOf(c), thread, {}, subgraphs));
    })
    .post("/threads/:thread_id/state", async (c) => {
      const thread = await load(c, "update");
      const b = await body(c, S.StateUpdate);
      const checkpoint = {
        ...(b.checkpoint ?? {}),
        ...(b.checkpoint_id ? { checkpoint_id: b.checkpoint_id } : {}),
      };
      return c.json(
        await state.update(orgOf(c), thread, {
          values: b.values,
          asNode: b.as_node ?? undefined,
          checkpoint,
        }),
      );
    })
    .patch("/threads/:thread_id/state", async (c) => {
      const { thread_id } = params(c, S.ThreadPath);
      const b = await body(c, S.ThreadStatePatch);
      const { metadata } = await updateThread(c, thread_id, b.metadata);
      await storage.threads.patch(orgOf(c), thread_id, metadata);
      return c.body(null, 204);
    })
    .post("/threads/:thread_id/state/checkpoint", async (c) => {
      const thread = await load(c);
      const b = await body(c, S.StateCheckpoint);
      return c.json(await state.get(orgOf(c), thread, b.checkpoint, b.subgraphs ?? false));
    })
    .get("/threads/:thread_id/state/:checkpoint_id", async (c) => {
      const thread = await load(c);
      const { checkpoint_id } = params(c, S.CheckpointPath);
      const { subgraphs } = query(c, S.StateQuery);
      const found = await state.get(orgOf(c), thread, { checkpoint_id }, subgraphs);
      if (found.checkpoint === null && thread.metadata.graph_id)
        throw notFound(`Checkpoint ${checkpoint_id} not found`);
      return c.json(found);
    })
    .get("/threads/:thread_id/history", async (c) => {
      const thread = await load(c);
      const q = query(c, S.HistoryQuery);
      return c.json(await state.history(orgOf(c), thread, { limit: q.limit, before: q.before }));
    })
    .post("/threads/:thread_id/history", async (c) => {
      const thread = await load(c);
      const b = await body(c, S.HistoryBody);
      const ref =
        typeof b.before === "string" || !b.before
          ? b.before
          : "configurable" in b.before
            ? b.before.configurable
            : b.before;
      const before = (typeof ref === "string" ? ref : ref?.checkpoint_id) ?? undefined;
      return c.json(
        await state.history(orgOf(c), thread, {
          limit: b.limit,
          before,
          metadata: b.metadata ?? undefined,
          checkpoint: b.checkpoint ?? undefined,
        }),
      );
    });
}
