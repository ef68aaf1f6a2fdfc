import type {
  NamespaceQuery,
  OrgId,
  StoreFilterCondition,
  StoreItemRecord,
  StoreRepo,
  StoreSearchHit,
  StoreSearchQuery,
  StoreWrite,
} from "../ports.js";
import { literalPrefix, selectNamespaces } from "../store-namespaces.js";
import type { PgDatabase, Queryable } from "./database.js";
import { jsonContains, Params } from "./json-filter.js";

/**
 * The long-term memory store on Postgres, the twin of sqlite/store.ts: namespaces joined with `.`
 * (a `COLLATE "C"` column, so "under a.b" is the same index range), vectors as `real[]` ranked in SQL
 * by the `hangar_cosine` function of migration 3 (no extension needed).
 */
interface ItemRow {
  namespace: string;
  key: string;
  value: Record<string, unknown>;
  created_at: string;
  updated_at: string;
  ttl_minutes: number | null;
  score?: number | null;
}

const MINUTE_MS = 60_000;

const toItem = (r: ItemRow): StoreItemRecord => ({
  namespace: r.namespace.split("."),
  key: r.key,
  value: r.value,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

function underNamespace(column: string, labels: string[], params: Params): string {
  if (labels.length === 0) return "TRUE";
  const joined = labels.join(".");
  return `(${column} = ${params.add(joined)} OR (${column} >= ${params.add(`${joined}.`)} AND ${column} < ${params.add(`${joined}/`)}))`;
}

const COMPARISON: Record<string, string> = { gt: ">", gte: ">=", lt: "<", lte: "<=" };

function condition(column: string, c: StoreFilterCondition, params: Params): string {
  const eq = (value: unknown) => `(${jsonContains(column, { [c.field]: value }, params)})`;
  const anyOf = (values: unknown[]) => (values.length === 0 ? "FALSE" : `(${values.map(eq).join(" OR ")})`);
  switch (c.op) {
    case "eq":
      return eq(c.value);
    case "ne":
      return `NOT COALESCE(${eq(c.value)}, FALSE)`;
    case "in":
      return anyOf(c.value as unknown[]);
    case "nin":
      return `NOT COALESCE(${anyOf(c.value as unknown[])}, FALSE)`;
    default: {
      const field = params.add(c.field);
      const op = COMPARISON[c.op];
      return typeof c.value === "number"
        ? `(jsonb_typeof(${column} -> ${field}) = 'number' AND (${column} ->> ${field})::numeric ${op} ${params.add(c.value)}::numeric)`
        : `(jsonb_typeof(${column} -> ${field}) = 'string' AND (${column} ->> ${field}) COLLATE "C" ${op} ${params.add(c.value)}::text)`;
    }
  }
}

export class PgStore implements StoreRepo {
  readonly #db: PgDatabase;

  constructor(db: PgDatabase) {
    this.#db = db;
  }

  async write(org: OrgId, writes: StoreWrite[], now: number): Promise<void> {
    const nowIso = new Date(now).toISOString();
    await this.#db.tx(async (c) => {
      for (const w of writes) {
        const namespace = w.namespace.join(".");
        if (w.value === null) {
          await c.query("DELETE FROM store_items WHERE org_id = $1 AND namespace = $2 AND key = $3", [
            org,
            namespace,
            w.key,
          ]);
          continue;
        }
        // An item rewritten after it expired (not swept yet) starts a new life: a new created_at.
        await c.query(
          `INSERT INTO store_items (org_id, namespace, key, value, created_at, updated_at, ttl_minutes, expires_at)
           VALUES ($1, $2, $3, $4, $5, $5, $6, $7)
           ON CONFLICT (org_id, namespace, key) DO UPDATE SET
             value = excluded.value,
             created_at = CASE WHEN store_items.expires_at <= $8 THEN excluded.created_at
                               ELSE store_items.created_at END,
             updated_at = excluded.updated_at,
             ttl_minutes = excluded.ttl_minutes,
             expires_at = excluded.expires_at`,
          [
            org,
            namespace,
            w.key,
            JSON.stringify(w.value),
            nowIso,
            w.ttlMinutes,
            w.ttlMinutes === null ? null : Math.round(now + w.ttlMinutes * MINUTE_MS),
            now,
          ],
        );
        await c.query("DELETE FROM store_vectors WHERE org_id = $1 AND namespace = $2 AND key = $3", [
          org,
          namespace,
          w.key,
        ]);
        for (const v of w.vectors) {
          await c.query(
            `INSERT INTO store_vectors (org_id, namespace, key, field, embedding) VALUES ($1, $2, $3, $4, $5::real[])
             ON CONFLICT (org_id, namespace, key, field) DO UPDATE SET embedding = excluded.embedding`,
            [org, namespace, w.key, v.field, v.vector],
          );
        }
      }
    });
  }

  async #refresh(
    c: Queryable,
    org: OrgId,
    items: { namespace: string; key: string; ttl_minutes: number | null }[],
    now: number,
  ) {
    for (const item of items) {
      if (item.ttl_minutes === null) continue;
      await c.query(
        "UPDATE store_items SET expires_at = $4 WHERE org_id = $1 AND namespace = $2 AND key = $3",
        [org, item.namespace, item.key, Math.round(now + item.ttl_minutes * MINUTE_MS)],
      );
    }
  }

  async get(
    org: OrgId,
    namespace: string[],
    key: string,
    opts: { refreshTtl: boolean; now: number },
  ): Promise<StoreItemRecord | null> {
    return this.#db.tx(async (c) => {
      const { rows } = await c.query<ItemRow>(
        `SELECT * FROM store_items i WHERE i.org_id = $1 AND i.namespace = $2 AND i.key = $3
           AND (i.expires_at IS NULL OR i.expires_at > $4)`,
        [org, namespace.join("."), key, opts.now],
      );
      const row = rows[0];
      if (!row) return null;
      if (opts.refreshTtl) await this.#refresh(c, org, [row], opts.now);
      return toItem(row);
    });
  }

  async search(org: OrgId, q: StoreSearchQuery, now: number): Promise<StoreSearchHit[]> {
    const params = new Params();
    const ranked = q.queryVector !== undefined;
    const select = ranked
      ? `i.*, (SELECT MAX(hangar_cosine(v.embedding, ${params.add(q.queryVector)}::real[])) FROM store_vectors v
           WHERE v.org_id = i.org_id AND v.namespace = i.namespace AND v.key = i.key) AS score`
      : "i.*";
    const where = [
      `i.org_id = ${params.add(org)}`,
      `(i.expires_at IS NULL OR i.expires_at > ${params.add(now)})`,
      underNamespace("i.namespace", q.namespacePrefix, params),
      ...q.filter.map((c) => condition("i.value", c, params)),
    ];
    // Postgres cannot use an output alias inside an ORDER BY expression, hence the derived table.
    const order = ranked
      ? "r.score IS NULL, r.score DESC, r.updated_at DESC, r.namespace, r.key"
      : "r.updated_at DESC, r.namespace, r.key";
    return this.#db.tx(async (c) => {
      const { rows } = await c.query<ItemRow>(
        `SELECT * FROM (SELECT ${select} FROM store_items i WHERE ${where.join(" AND ")}) r
         ORDER BY ${order} LIMIT ${params.add(q.limit)} OFFSET ${params.add(q.offset)}`,
        params.values,
      );
      if (q.refreshTtl) await this.#refresh(c, org, rows, now);
      return rows.map((r) => (ranked ? { ...toItem(r), score: r.score ?? null } : toItem(r)));
    });
  }

  async listNamespaces(org: OrgId, q: NamespaceQuery, now: number): Promise<string[][]> {
    const literal = literalPrefix(q.prefix);
    const params = new Params([org, now]);
    const under = underNamespace("i.namespace", literal, params);
    const { rows } = await this.#db.query<{ namespace: string }>(
      `SELECT DISTINCT i.namespace FROM store_items i
       WHERE i.org_id = $1 AND (i.expires_at IS NULL OR i.expires_at > $2) AND ${under}`,
      params.values,
    );
    return selectNamespaces(
      rows.map((r) => r.namespace),
      q,
    );
  }

  async sweepExpired(now: number): Promise<number> {
    const { rowCount } = await this.#db.query(
      "DELETE FROM store_items WHERE expires_at IS NOT NULL AND expires_at <= $1",
      [now],
    );
    return rowCount ?? 0;
  }

  async nextExpiry(): Promise<number | null> {
    const { rows } = await this.#db.query<{ t: number | null }>(
      "SELECT MIN(expires_at) AS t FROM store_items WHERE expires_at IS NOT NULL",
    );
    return rows[0].t;
  }
}
