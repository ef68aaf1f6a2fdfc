import { type Context, Hono } from "hono";
import { z } from "zod";
import type { AuthAction } from "../auth/custom.js";
import { badRequest, forbidden } from "../errors.js";
import { type AppEnv, orgOf } from "../http/context.js";
import { body, query } from "../http/validation.js";
import { MAX_TTL_MINUTES, namespaceProblem, parseStoreFilter } from "../runtime/store/store.js";
import { authorize } from "./authz.js";
import type { AgentDeps } from "./context.js";
import { filterObj } from "./schemas.js";

// ---- schemas (unknown fields accepted, wrong types 422; see schemas.ts) -----------------------

const labels = z.array(z.string({ error: "must be a string" }), { error: "must be a list of strings" });

/** A namespace (or prefix, with `allowEmpty`): labels neither empty nor containing a period. */
const namespace = (opts: { allowEmpty?: boolean } = {}) =>
  labels.superRefine((ns, ctx) => {
    const problem = namespaceProblem(ns, opts);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });

const limit = (max: number, dflt: number) =>
  z
    .number({ error: "must be an integer" })
    .int({ error: "must be an integer" })
    .min(1)
    .max(max)
    .default(dflt);
const offset = z
  .number({ error: "must be an integer" })
  .int({ error: "must be an integer" })
  .min(0)
  .default(0);

const optionalFlag = z
  .enum(["true", "false", "1", "0", "yes", "no"], { error: "must be true or false" })
  .optional()
  .transform((v) => (v === undefined ? undefined : v === "true" || v === "1" || v === "yes"));

export const StorePut = z.object({
  namespace: namespace(),
  key: z.string({ error: "must be a string" }).min(1, { error: "must not be empty" }),
  value: z.record(z.string(), z.unknown(), { error: "must be an object" }),
  index: z
    .union([z.literal(false), z.array(z.string())], { error: "must be false or a list of field paths" })
    .nullish(),
  ttl: z
    .number({ error: "must be a number of minutes" })
    .positive({ error: "must be more than 0 minutes" })
    .max(MAX_TTL_MINUTES, { error: `must be at most ${MAX_TTL_MINUTES} minutes (100 years)` })
    .nullish(),
});

export const StoreGetQuery = z.object({
  namespace: z
    .string()
    .optional()
    .transform((s) => (s ? s.split(".") : []))
    .pipe(namespace()),
  key: z.string({ error: "is required" }).min(1, { error: "must not be empty" }),
  refresh_ttl: optionalFlag,
});

export const StoreDelete = z.object({
  namespace: namespace(),
  key: z.string({ error: "must be a string" }).min(1, { error: "must not be empty" }),
});

const filter = filterObj.superRefine((f, ctx) => {
  for (const p of parseStoreFilter(f).problems)
    ctx.addIssue({ code: "custom", message: p.message, path: p.path });
});

export const StoreSearch = z.object({
  namespace_prefix: namespace({ allowEmpty: true }).nullish(),
  filter: filter.nullish(),
  limit: limit(1000, 10),
  offset,
  query: z.string({ error: "must be a string" }).nullish(),
  refresh_ttl: z.boolean({ error: "must be true or false" }).nullish(),
});

/** Prefix and suffix labels may be `*` (any one label). */
export const StoreNamespaces = z.object({
  prefix: namespace({ allowEmpty: true }).nullish(),
  suffix: namespace({ allowEmpty: true }).nullish(),
  max_depth: z.number({ error: "must be an integer" }).int({ error: "must be an integer" }).min(1).nullish(),
  limit: limit(1000, 100),
  offset,
});

/** `/store/*`: the long-term memory store, the same one graphs see as `config.store`. */
export function storeRoutes(deps: AgentDeps) {
  const { store } = deps;
  /**
   * `store:<action>`: the handler may refuse (403) or change the request (typically: put the user's
   * identity in front of the namespace, so each user has a namespace of their own). Filters it returns
   * are not applied, as in the reference servers: store items have no metadata to match.
   */
  const scoped = async <V extends { namespace: string[] }>(
    c: Context<AppEnv>,
    action: AuthAction,
    value: V,
  ) => {
    const changed = (await authorize(deps, c, "store", action, value)).value;
    const ns: unknown = changed.namespace;
    if (!Array.isArray(ns) || !ns.every((label) => typeof label === "string" && label !== ""))
      throw badRequest(
        `The store:${action} handler left an invalid namespace (a list of non-empty strings is needed)`,
      );
    return changed;
  };
  return new Hono<AppEnv>()
    .put("/store/items", async (c) => {
      const b = await body(c, StorePut);
      const v = await scoped(c, "put", { namespace: b.namespace, key: b.key, value: b.value });
      await store.withOrg(orgOf(c)).putItem(v.namespace, v.key, v.value, { index: b.index, ttl: b.ttl });
      return c.body(null, 204);
    })
    .get("/store/items", async (c) => {
      const q = query(c, StoreGetQuery);
      const v = await scoped(c, "get", { namespace: q.namespace, key: q.key });
      const item = await store.withOrg(orgOf(c)).getItem(v.namespace, v.key, { refreshTtl: q.refresh_ttl });
      return c.json(item);
    })
    .delete("/store/items", async (c) => {
      const b = await body(c, StoreDelete);
      const v = await scoped(c, "delete", { namespace: b.namespace, key: b.key });
      await store.withOrg(orgOf(c)).deleteItem(v.namespace, v.key);
      return c.body(null, 204);
    })
    .post("/store/items/search", async (c) => {
      const b = await body(c, StoreSearch);
      const v = await scoped(c, "search", {
        namespace: b.namespace_prefix ?? [],
        filter: b.filter ?? null,
        limit: b.limit,
        offset: b.offset,
        query: b.query ?? null,
      });
      const items = await store.withOrg(orgOf(c)).searchItems(v.namespace, {
        filter: v.filter,
        limit: b.limit,
        offset: b.offset,
        query: v.query,
        refreshTtl: b.refresh_ttl,
      });
      return c.json({ items });
    })
    .post("/store/namespaces", async (c) => {
      const b = await body(c, StoreNamespaces);
      const asked = b.prefix ?? [];
      const v = await scoped(c, "list_namespaces", {
        namespace: asked,
        suffix: b.suffix ?? null,
        max_depth: b.max_depth ?? null,
        limit: b.limit,
        offset: b.offset,
      });
      // `*` matches any label in a prefix: one a handler added (a user's identity) must be that label.
      const wildcards = (ns: string[]) => ns.filter((label) => label === "*").length;
      if (wildcards(v.namespace) > wildcards(asked))
        throw forbidden(
          "The store:list_namespaces handler made a prefix label '*', which would match any namespace",
        );
      const namespaces = await store.withOrg(orgOf(c)).namespaces({
        prefix: v.namespace.length ? v.namespace : undefined,
        suffix: b.suffix ?? undefined,
        maxDepth: b.max_depth ?? undefined,
        limit: b.limit,
        offset: b.offset,
      });
      return c.json({ namespaces });
    });
}
