/**
 * The long-term memory store (tables `store_items`, `store_vectors`). A namespace is stored as its labels
 * joined with `.`, which no label may contain (the runtime validates that), so "every namespace under
 * a.b" is the index range `['a.b.', 'a.b/')` plus `a.b` itself ('/' sorts right after '.'; the column
 * compares bytes on both engines, migrations.ts).
 * Vectors are ranked in SQL by `hangar_cosine` (registered on the SQLite connection, a SQL function
 * on Postgres), so ranking, filtering and pagination are one query.
 */
import type { Expression, ExpressionBuilder, SelectQueryBuilder, SqlBool } from "kysely";
import type {
  NamespaceQuery,
  OrgId,
  StoreFilterCondition,
  StoreItemRecord,
  StoreRead,
  StoreRepo,
  StoreSearchHit,
  StoreSearchQuery,
  StoreWrite,
} from "../ports.js";
import { all, changed, type Executor, SqlRepo } from "./database.js";
import type { Dialect } from "./dialect.js";
import { fromExcluded, sql } from "./kysely.js";
import type { Tables } from "./tables.js";

type ItemRow = Tables["store_items"] & { score?: number | null };
type Eb = ExpressionBuilder<{ i: Tables["store_items"] }, "i">;
type Read<R> = (ex: Executor) => SelectQueryBuilder<any, any, R>;

const MINUTE_MS = 60_000;

const toItem = (r: ItemRow): StoreItemRecord => ({
  namespace: r.namespace.split("."),
  key: r.key,
  value: JSON.parse(r.value),
  created_at: r.created_at,
  updated_at: r.updated_at,
});

/** The organization's item (or its vectors) at `key` of `namespace`. */
const itemKey = (org: string, namespace: string, key: string) => (eb: ExpressionBuilder<any, any>) =>
  eb.and([eb("org_id", "=", org), eb("namespace", "=", namespace), eb("key", "=", key)]);

/** The organization's items not expired at `now` (expired items are invisible before they are swept). */
const liveItems = (ex: Executor, org: OrgId, now: number) =>
  ex
    .selectFrom("store_items as i")
    .where("i.org_id", "=", org)
    .where((eb) => eb.or([eb("i.expires_at", "is", null), eb("i.expires_at", ">", now)]));

/** `i.namespace` is `labels` joined or lies under it. */
function underNamespace(eb: Eb, labels: string[]): Expression<SqlBool> {
  if (labels.length === 0) return sql<SqlBool>`1 = 1`;
  const joined = labels.join(".");
  return eb.or([
    eb("i.namespace", "=", joined),
    eb.and([eb("i.namespace", ">=", `${joined}.`), eb("i.namespace", "<", `${joined}/`)]),
  ]);
}

const COMPARISON = { gt: ">", gte: ">=", lt: "<", lte: "<=" } as const;

function condition(dialect: Dialect, c: StoreFilterCondition): Expression<SqlBool> {
  const eq = (value: unknown) => dialect.jsonContains("i.value", { [c.field]: value });
  const anyOf = (values: unknown[]): Expression<SqlBool> =>
    values.length === 0 ? sql<SqlBool>`1 = 0` : sql<SqlBool>`(${sql.join(values.map(eq), sql` OR `)})`;
  // Containment can be NULL for a missing field: `ne` and `nin` hold for it.
  const not = (e: Expression<SqlBool>) => sql<SqlBool>`NOT COALESCE(${e}, 1 = 0)`;
  if (c.op === "eq") return eq(c.value);
  if (c.op === "ne") return not(eq(c.value));
  if (c.op === "in") return anyOf(c.value as unknown[]);
  if (c.op === "nin") return not(anyOf(c.value as unknown[]));
  return dialect.jsonCompare("i.value", c.field, COMPARISON[c.op], c.value as number | string);
}

/** The prefix's labels before its first `*` wildcard: what SQL can match directly. */
function literalPrefix(prefix: string[] | undefined): string[] {
  const labels = prefix ?? [];
  const wildcard = labels.indexOf("*");
  return wildcard < 0 ? labels : labels.slice(0, wildcard);
}

const matchesAt = (labels: string[], pattern: string[], start: number) =>
  pattern.every((p, i) => p === "*" || labels[start + i] === p);

function compareLabels(a: string[], b: string[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return a.length - b.length;
}

/**
 * The page of distinct namespaces that the query selects, sorted: SQL narrowed them to the literal leading
 * labels of the prefix; wildcards, the suffix, max depth, order and paging are applied here.
 */
function selectNamespaces(rows: { namespace: string }[], q: NamespaceQuery): string[][] {
  const found = new Map<string, string[]>();
  const { prefix, suffix } = q;
  for (const { namespace } of rows) {
    let labels = namespace.split(".");
    if (prefix && (labels.length < prefix.length || !matchesAt(labels, prefix, 0))) continue;
    const tail = labels.length - (suffix?.length ?? 0);
    if (suffix && (tail < 0 || !matchesAt(labels, suffix, tail))) continue;
    if (q.maxDepth !== undefined) labels = labels.slice(0, q.maxDepth);
    found.set(labels.join("."), labels);
  }
  return [...found.values()].sort(compareLabels).slice(q.offset, q.offset + q.limit);
}

export class SqlStore extends SqlRepo implements StoreRepo {
  async write(org: OrgId, writes: StoreWrite[], now: number): Promise<void> {
    const { dialect } = this;
    const nowIso = new Date(now).toISOString();
    const rows = writes.map((w) => ({
      w,
      namespace: w.namespace.join("."),
      value: w.value === null ? null : JSON.stringify(w.value),
      // A field given twice keeps its last vector, as consecutive upserts would.
      vectors: [...new Map(w.vectors.map((v) => [v.field, dialect.vector(v.vector)])).entries()],
    }));
    await this.transaction(function* (tx) {
      for (const { w, namespace, value, vectors } of rows) {
        if (value === null) {
          yield* changed(tx.deleteFrom("store_items").where(itemKey(org, namespace, w.key)));
          continue;
        }
        const item = { org_id: org, namespace, key: w.key };
        // An item rewritten after it expired (not swept yet) starts a new life: a new created_at.
        yield* changed(
          tx
            .insertInto("store_items")
            .values({
              ...item,
              value,
              created_at: nowIso,
              updated_at: nowIso,
              ttl_minutes: w.ttlMinutes,
              expires_at: w.ttlMinutes === null ? null : Math.round(now + w.ttlMinutes * MINUTE_MS),
            })
            .onConflict((oc) =>
              oc.columns(["org_id", "namespace", "key"]).doUpdateSet((eb) => ({
                ...fromExcluded(["value", "updated_at", "ttl_minutes", "expires_at"])(eb),
                created_at: eb
                  .case()
                  .when("store_items.expires_at", "<=", now)
                  .then(eb.ref("excluded.created_at"))
                  .else(eb.ref("store_items.created_at"))
                  .end(),
              })),
            ),
        );
        yield* changed(tx.deleteFrom("store_vectors").where(itemKey(org, namespace, w.key)));
        if (vectors.length) {
          const vectorRows = vectors.map(([field, embedding]) => ({ ...item, field, embedding }));
          yield* changed(tx.insertInto("store_vectors").values(vectorRows));
        }
      }
    });
  }

  async get(org: OrgId, namespace: string[], key: string, opts: StoreRead): Promise<StoreItemRecord | null> {
    const [row] = await this.#read(org, opts, (ex) =>
      liveItems(ex, org, opts.now)
        .selectAll("i")
        .where("i.namespace", "=", namespace.join("."))
        .where("i.key", "=", key),
    );
    return row ? toItem(row) : null;
  }

  async search(org: OrgId, q: StoreSearchQuery, now: number): Promise<StoreSearchHit[]> {
    const { dialect } = this;
    const ranked = q.queryVector !== undefined;
    const score = ranked ? dialect.vectorParam(q.queryVector!) : null;
    const read = (ex: Executor) =>
      liveItems(ex, org, now)
        .selectAll("i")
        .where((eb) => underNamespace(eb, q.namespacePrefix))
        .where((eb) => eb.and(q.filter.map((c) => condition(dialect, c))))
        // An item scores its best-matching vector; items without vectors (score NULL) come last.
        .$if(ranked, (qb) =>
          qb
            .select((eb) =>
              eb
                .selectFrom("store_vectors as v")
                .select(sql<number | null>`MAX(hangar_cosine(v.embedding, ${score}))`.as("score"))
                .whereRef("v.org_id", "=", "i.org_id")
                .whereRef("v.namespace", "=", "i.namespace")
                .whereRef("v.key", "=", "i.key")
                .as("score"),
            )
            .orderBy(sql`score`, (ob) => ob.desc().nullsLast()),
        )
        .orderBy("i.updated_at", "desc")
        .orderBy("i.namespace")
        .orderBy("i.key")
        .limit(q.limit)
        .offset(q.offset);
    const hit = (r: ItemRow): StoreSearchHit =>
      ranked ? { ...toItem(r), score: r.score ?? null } : toItem(r);
    return (await this.#read(org, { refreshTtl: q.refreshTtl, now }, read)).map(hit);
  }

  /** The rows `read` selects; with `refreshTtl`, their TTLs restart, in one transaction with the read. */
  async #read<R extends ItemRow>(org: OrgId, { refreshTtl, now }: StoreRead, read: Read<R>): Promise<R[]> {
    if (!refreshTtl) return read(this.database.db).execute();
    return this.transaction(function* (tx) {
      const rows = yield* all(read(tx));
      for (const { namespace, key, ttl_minutes } of rows) {
        if (ttl_minutes === null) continue;
        const item = tx.updateTable("store_items").where(itemKey(org, namespace, key));
        yield* changed(item.set({ expires_at: Math.round(now + ttl_minutes * MINUTE_MS) }));
      }
      return rows;
    });
  }

  async listNamespaces(org: OrgId, q: NamespaceQuery, now: number): Promise<string[][]> {
    const literal = literalPrefix(q.prefix);
    const rows = await liveItems(this.database.db, org, now)
      .select("i.namespace")
      .distinct()
      .where((eb) => underNamespace(eb, literal))
      .execute();
    return selectNamespaces(rows, q);
  }

  async sweepExpired(now: number): Promise<number> {
    const result = await this.database.db
      .deleteFrom("store_items")
      .where("expires_at", "is not", null)
      .where("expires_at", "<=", now)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async nextExpiry(): Promise<number | null> {
    const row = await this.database.db
      .selectFrom("store_items")
      .select((eb) => eb.fn.min("expires_at").as("t"))
      .where("expires_at", "is not", null)
      .executeTakeFirstOrThrow();
    return row.t === null ? null : Number(row.t);
  }
}
