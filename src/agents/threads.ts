import { randomUUID } from "node:crypto";
import { Hono } from "hono";
import type { AuthAction } from "../auth/custom.js";
import { conflict, isNotFound, notFound } from "../errors.js";
import { type AppEnv, orgOf } from "../http/context.js";
import { sseResponse } from "../http/sse.js";
import { body, params, query, queryWithLists } from "../http/validation.js";
import { type ThreadStreamMode, threadStreamStart } from "../runtime/runs/thread-stream.js";
import { matchesFilter } from "../storage/filter.js";
import type { JsonObject, Thread, ThreadTtl } from "../storage/ports.js";
import { authorize, visible, visibleThread } from "./authz.js";
import { type AgentDeps, pick } from "./context.js";
import * as S from "./schemas.js";

/** A thread's TTL as `include=ttl` shows it (the official API's shape). */
const ttlView = (ttl: ThreadTtl, updatedAt: string) => ({
  strategy: ttl.strategy,
  ttl_minutes: ttl.minutes,
  expires_at: new Date(Date.parse(updatedAt) + ttl.minutes * 60_000).toISOString(),
});

/**
 * `extract` of a thread search: each alias's path read from the thread (`values.messages[-1].content`);
 * a path that leads nowhere gives null.
 */
function extractPaths(thread: Thread, paths: Record<string, string>): Record<string, unknown> {
  const step = (at: unknown, key: string): unknown => {
    if (Array.isArray(at) && /^-?\d+$/.test(key)) return at.at(Number(key));
    return at !== null && typeof at === "object" && Object.hasOwn(at, key)
      ? (at as Record<string, unknown>)[key]
      : undefined;
  };
  const read = (path: string) =>
    path
      .replace(/\[(-?\d+)\]/g, ".$1")
      .split(".")
      .reduce<unknown>(step, thread) ?? null;
  return Object.fromEntries(Object.entries(paths).map(([alias, path]) => [alias, read(path)]));
}

/**
 * A thread state as `select` asks for it (SDK 1.15 `getState`/`getHistory`): only the fields named,
 * `values.<key>` keeping that key of the values; every field without a selection.
 */
function selectState<T extends object>(state: T, select: readonly string[] | null | undefined): Partial<T> {
  if (!select?.length) return state;
  const out: Record<string, unknown> = {};
  const values = (state as { values?: unknown }).values;
  for (const field of select) {
    if (!field.startsWith("values.")) {
      if (field in state) out[field] = (state as Record<string, unknown>)[field];
      continue;
    }
    const key = field.slice("values.".length);
    if (out.values === undefined || out.values === null || Array.isArray(out.values)) out.values = {};
    if (values !== null && typeof values === "object" && Object.hasOwn(values, key))
      (out.values as Record<string, unknown>)[key] = (values as Record<string, unknown>)[key];
  }
  // A whole `values` named besides `values.<key>` wins.
  if (select.includes("values")) out.values = values;
  return out as Partial<T>;
}

/** True when `step` succeeds, false when it finds nothing (a 404); other errors propagate. */
const succeeds = (step: Promise<unknown>): Promise<boolean> =>
  step.then(
    () => true,
    (err: unknown) => (isNotFound(err) ? false : Promise.reject(err)),
  );

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
      const extract = b.extract;
      const found = extract ? items.map((t) => ({ ...t, extracted: extractPaths(t, extract) })) : items;
      // `extracted` comes with whatever `select` keeps.
      return c.json(
        extract && b.select?.length ? pick(found, [...b.select, "extracted"]) : pick(found, b.select),
      );
    })
    .post("/threads/prune", async (c) => {
      const b = await body(c, S.ThreadPrune);
      const org = orgOf(c);
      let pruned = 0;
      // One thread at a time: each is authorized as its deletion would be (a hidden or absent thread
      // is skipped, not counted), and a long list never holds many transactions at once.
      for (const threadId of new Set(b.thread_ids)) {
        const thread = await storage.threads.get(org, threadId);
        if (!(await succeeds(visible(deps, c, "threads", "delete", threadId, thread, {})))) continue;
        if (b.strategy === "keep_latest") {
          if (await storage.threads.keepLatest(org, threadId)) pruned += 1;
          continue;
        }
        if (await succeeds(runs.deleteThread(org, threadId))) pruned += 1;
      }
      return c.json({ pruned_count: pruned });
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
    .get("/threads/:thread_id", async (c) => {
      const { include } = queryWithLists(c, S.ThreadGetQuery);
      const thread = await load(c);
      if (!include.includes("ttl")) return c.json(thread);
      const ttl = await storage.threads.ttl(orgOf(c), thread.thread_id);
      return c.json({ ...thread, ttl: ttl && ttlView(ttl, thread.updated_at) });
    })
    .get("/threads/:thread_id/stream", async (c) => {
      const q = queryWithLists(c, S.ThreadStreamQuery);
      const thread = await load(c);
      const asked = [...q.stream_mode, ...q.stream_modes];
      const modes = new Set<ThreadStreamMode>(asked.length ? asked : ["run_modes"]);
      const start = threadStreamStart(c.req.header("last-event-id"));
      const org = orgOf(c);
      return sseResponse((signal) => deps.threadStreams.follow(org, thread.thread_id, modes, start, signal), {
        withIds: true,
      });
    })
    .get("/threads/:thread_id/storage", async (c) => {
      const thread = await load(c);
      const usage = await storage.threads.checkpointStorage(orgOf(c), thread.thread_id);
      const total = usage.checkpoints.bytes + usage.channel_values.bytes + usage.pending_writes.bytes;
      return c.json({ thread_id: thread.thread_id, total_bytes: total, ...usage });
    })
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
      const { subgraphs, select } = queryWithLists(c, S.StateQuery);
      return c.json(selectState(await state.get(orgOf(c), thread, {}, subgraphs), select));
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
      return c.json(
        selectState(await state.get(orgOf(c), thread, b.checkpoint, b.subgraphs ?? false), b.select),
      );
    })
    .get("/threads/:thread_id/state/:checkpoint_id", async (c) => {
      const thread = await load(c);
      const { checkpoint_id } = params(c, S.CheckpointPath);
      const { subgraphs, select } = queryWithLists(c, S.StateQuery);
      const found = await state.get(orgOf(c), thread, { checkpoint_id }, subgraphs);
      if (found.checkpoint === null && thread.metadata.graph_id)
        throw notFound(`Checkpoint ${checkpoint_id} not found`);
      return c.json(selectState(found, select));
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
      const states = await state.history(orgOf(c), thread, {
        limit: b.limit,
        before,
        metadata: b.metadata ?? undefined,
        checkpoint: b.checkpoint ?? undefined,
      });
      return c.json(states.map((s) => selectState(s as object, b.select)));
    });
}
