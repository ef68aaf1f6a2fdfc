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
import { type Db, statementCache } from "./database.js";
import { jsonContains, type SqlFragment } from "./json-filter.js";

/**
 * The long-term memory store in SQLite (tables `store_items`, `store_vectors`).
 *
 * A namespace is stored as its labels joined with `.`, which no label may contain (the runtime
 * validates that), so "every namespace under a.b" is the index range `['a.b.', 'a.b/')` plus `a.b`
 * itself ('/' sorts right after '.'). Vectors are float32 blobs ranked in SQL by `hangar_cosine`, a
 * function registered on the connection, so ranking, filtering and pagination are one query.
 */
interface ItemRow {
  namespace: string;
  key: string;
  value: string;
  created_at: string;
  updated_at: string;
  ttl_minutes: number | null;
  score?: number | null;
}

const MINUTE_MS = 60_000;
const LIVE = "(i.expires_at IS NULL OR i.expires_at > ?)";

const toItem = (r: ItemRow): StoreItemRecord => ({
  namespace: r.namespace.split("."),
  key: r.key,
  value: JSON.parse(r.value),
  created_at: r.created_at,
  updated_at: r.updated_at,
});

export const encodeVector = (vector: number[]): Buffer => Buffer.from(new Float32Array(vector).buffer);

function decodeVector(blob: Buffer): Float32Array {
  // SQLite hands out blobs at any byte offset; a Float32Array view needs 4-byte alignment.
  if (blob.byteOffset % 4 === 0) return new Float32Array(blob.buffer, blob.byteOffset, blob.byteLength / 4);
  return new Float32Array(Uint8Array.prototype.slice.call(blob).buffer);
}

/** Cosine similarity of two float32 blobs; null when the lengths differ or a vector is all zeros. */
export function cosineOfBlobs(a: Buffer | null, b: Buffer | null): number | null {
  if (!a || !b || a.byteLength !== b.byteLength) return null;
  const x = decodeVector(a);
  const y = decodeVector(b);
  let dot = 0;
  let nx = 0;
  let ny = 0;
  for (let i = 0; i < x.length; i++) {
    dot += x[i] * y[i];
    nx += x[i] * x[i];
    ny += y[i] * y[i];
  }
  return nx === 0 || ny === 0 ? null : dot / Math.sqrt(nx * ny);
}

/** `namespace` is `joined` or lies under it. */
function underNamespace(column: string, labels: string[]): SqlFragment {
  if (labels.length === 0) return { sql: "1", params: [] };
  const joined = labels.join(".");
  return {
    sql: `(${column} = ? OR (${column} >= ? AND ${column} < ?))`,
    params: [joined, `${joined}.`, `${joined}/`],
  };
}

const fieldPath = (field: string) => `$."${field.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;

const COMPARISON: Record<string, string> = { gt: ">", gte: ">=", lt: "<", lte: "<=" };

/** One filter condition on `column` (a JSON object) as SQL. */
function condition(column: string, c: StoreFilterCondition): SqlFragment {
  const eq = (value: unknown) => jsonContains(column, { [c.field]: value });
  const anyOf = (values: unknown[]): SqlFragment => {
    if (values.length === 0) return { sql: "0", params: [] };
    const parts = values.map(eq);
    return {
      sql: `(${parts.map((p) => `(${p.sql})`).join(" OR ")})`,
      params: parts.flatMap((p) => p.params),
    };
  };
  const not = (f: SqlFragment): SqlFragment => ({ sql: `NOT COALESCE((${f.sql}), 0)`, params: f.params });
  switch (c.op) {
    case "eq":
      return eq(c.value);
    case "ne":
      return not(eq(c.value));
    case "in":
      return anyOf(c.value as unknown[]);
    case "nin":
      return not(anyOf(c.value as unknown[]));
    default: {
      const path = fieldPath(c.field);
      const types = typeof c.value === "number" ? "('integer', 'real')" : "('text')";
      return {
        sql: `(json_type(${column}, ?) IN ${types} AND json_extract(${column}, ?) ${COMPARISON[c.op]} ?)`,
        params: [path, path, c.value],
      };
    }
  }
}

export class SqliteStore implements StoreRepo {
  readonly #db: Db;
  readonly #q: ReturnType<typeof statementCache>;

  constructor(db: Db) {
    this.#db = db;
    this.#q = statementCache(db);
    db.function("hangar_cosine", { deterministic: true }, (a: unknown, b: unknown) =>
      cosineOfBlobs(a as Buffer | null, b as Buffer | null),
    );
  }

  async write(org: OrgId, writes: StoreWrite[], now: number): Promise<void> {
    const nowIso = new Date(now).toISOString();
    this.#db.transaction(() => {
      for (const w of writes) {
        const namespace = w.namespace.join(".");
        if (w.value === null) {
          this.#q("DELETE FROM store_items WHERE org_id = ? AND namespace = ? AND key = ?").run(
            org,
            namespace,
            w.key,
          );
          continue;
        }
        // An item rewritten after it expired (not swept yet) starts a new life: a new created_at.
        this.#q(
          `INSERT INTO store_items (org_id, namespace, key, value, created_at, updated_at, ttl_minutes, expires_at)
           VALUES (@org, @namespace, @key, @value, @now, @now, @ttl, @expires)
           ON CONFLICT (org_id, namespace, key) DO UPDATE SET
             value = excluded.value,
             created_at = CASE WHEN store_items.expires_at <= @nowMs THEN excluded.created_at
                               ELSE store_items.created_at END,
             updated_at = excluded.updated_at,
             ttl_minutes = excluded.ttl_minutes,
             expires_at = excluded.expires_at`,
        ).run({
          org,
          namespace,
          key: w.key,
          value: JSON.stringify(w.value),
          now: nowIso,
          nowMs: now,
          ttl: w.ttlMinutes,
          expires: w.ttlMinutes === null ? null : Math.round(now + w.ttlMinutes * MINUTE_MS),
        });
        this.#q("DELETE FROM store_vectors WHERE org_id = ? AND namespace = ? AND key = ?").run(
          org,
          namespace,
          w.key,
        );
        for (const v of w.vectors) {
          this.#q(
            "INSERT OR REPLACE INTO store_vectors (org_id, namespace, key, field, embedding) VALUES (?, ?, ?, ?, ?)",
          ).run(org, namespace, w.key, v.field, encodeVector(v.vector));
        }
      }
    })();
  }

  /** Restarts the TTL of the given live items that have one. */
  #refresh(org: OrgId, items: { namespace: string; key: string; ttl_minutes: number | null }[], now: number) {
    for (const item of items) {
      if (item.ttl_minutes === null) continue;
      this.#q("UPDATE store_items SET expires_at = ? WHERE org_id = ? AND namespace = ? AND key = ?").run(
        Math.round(now + item.ttl_minutes * MINUTE_MS),
        org,
        item.namespace,
        item.key,
      );
    }
  }

  async get(
    org: OrgId,
    namespace: string[],
    key: string,
    opts: { refreshTtl: boolean; now: number },
  ): Promise<StoreItemRecord | null> {
    return this.#db.transaction(() => {
      const row: ItemRow | undefined = this.#q(
        `SELECT * FROM store_items i WHERE i.org_id = ? AND i.namespace = ? AND i.key = ? AND ${LIVE}`,
      ).get(org, namespace.join("."), key, opts.now);
      if (!row) return null;
      if (opts.refreshTtl) this.#refresh(org, [row], opts.now);
      return toItem(row);
    })();
  }

  async search(org: OrgId, q: StoreSearchQuery, now: number): Promise<StoreSearchHit[]> {
    const where: SqlFragment[] = [
      { sql: "i.org_id = ?", params: [org] },
      { sql: LIVE, params: [now] },
      underNamespace("i.namespace", q.namespacePrefix),
      ...q.filter.map((c) => condition("i.value", c)),
    ];
    const ranked = q.queryVector !== undefined;
    const select = ranked
      ? `i.*, (SELECT MAX(hangar_cosine(v.embedding, ?)) FROM store_vectors v
           WHERE v.org_id = i.org_id AND v.namespace = i.namespace AND v.key = i.key) AS score`
      : "i.*";
    const order = ranked
      ? "score IS NULL, score DESC, i.updated_at DESC, i.namespace, i.key"
      : "i.updated_at DESC, i.namespace, i.key";
    const params = [
      ...(ranked ? [encodeVector(q.queryVector!)] : []),
      ...where.flatMap((w) => w.params),
      q.limit,
      q.offset,
    ];
    return this.#db.transaction(() => {
      const rows = this.#db
        .prepare(
          `SELECT ${select} FROM store_items i WHERE ${where.map((w) => w.sql).join(" AND ")}
           ORDER BY ${order} LIMIT ? OFFSET ?`,
        )
        .all(...params) as ItemRow[];
      if (q.refreshTtl) this.#refresh(org, rows, now);
      return rows.map((r) => (ranked ? { ...toItem(r), score: r.score ?? null } : toItem(r)));
    })();
  }

  async listNamespaces(org: OrgId, q: NamespaceQuery, now: number): Promise<string[][]> {
    // SQL narrows to the literal leading labels of the prefix; wildcards, suffix and depth are applied here.
    const literal = literalPrefix(q.prefix);
    const under = underNamespace("i.namespace", literal);
    const rows = this.#q(
      `SELECT DISTINCT i.namespace FROM store_items i WHERE i.org_id = ? AND ${LIVE} AND ${under.sql}`,
    ).all(org, now, ...under.params) as { namespace: string }[];
    return selectNamespaces(
      rows.map((r) => r.namespace),
      q,
    );
  }

  async sweepExpired(now: number): Promise<number> {
    return this.#q("DELETE FROM store_items WHERE expires_at IS NOT NULL AND expires_at <= ?").run(now)
      .changes;
  }

  async nextExpiry(): Promise<number | null> {
    const row = this.#q(
      "SELECT MIN(expires_at) AS t FROM store_items WHERE expires_at IS NOT NULL",
    ).get() as {
      t: number | null;
    };
    return row.t;
  }
}
