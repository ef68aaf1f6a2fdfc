/**
 * The storage port of the long-term memory store: the items behind `/store/*` and behind the
 * `config.store` graphs see (runtime/store.ts puts LangGraph's `BaseStore` on top of it). Re-exported
 * by `ports.ts`.
 *
 * What stays out of the adapters: request validation, the embedding function (adapters receive and
 * compare vectors, they never compute them) and the clock (`now`, epoch ms, is passed in so TTL
 * behaviour is testable and every process of a deployment agrees on what "expired" means).
 *
 * Expired items (TTL passed) are invisible to every read at once; `sweepExpired` only reclaims space.
 */

type OrgId = string;

export interface StoreItemRecord {
  namespace: string[];
  key: string;
  value: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

export interface StoreSearchHit extends StoreItemRecord {
  /** Cosine similarity to the query vector; null for items with no vectors. Absent without a query. */
  score?: number | null;
}

/** One embedded text of an item: `field` names where it came from (`text`, `tags.1`, `$`). */
export interface StoreVector {
  field: string;
  vector: number[];
}

export interface StoreWrite {
  namespace: string[];
  key: string;
  /** The new value; null deletes the item. */
  value: Record<string, unknown> | null;
  /** Minutes until the item expires after this write (and after each refreshing read); null = never. */
  ttlMinutes: number | null;
  /** The item's embeddings; they replace any it had. Empty = the item is not indexed. */
  vectors: StoreVector[];
}

export type StoreFilterOp = "eq" | "ne" | "gt" | "gte" | "lt" | "lte" | "in" | "nin";

/**
 * One condition on a top-level field of the value. `eq` with an object matches values whose field
 * contains that object (recursively); `gt`…`lte` compare numbers with numbers and strings with
 * strings; `in`/`nin` take a list of values compared as `eq`. A missing field is `ne` anything.
 */
export interface StoreFilterCondition {
  field: string;
  op: StoreFilterOp;
  value: unknown;
}

export interface StoreSearchQuery {
  /** Items whose namespace starts with these labels; [] = every item. */
  namespacePrefix: string[];
  /** All must hold. */
  filter: StoreFilterCondition[];
  limit: number;
  offset: number;
  /**
   * Rank by cosine similarity to this vector (an item scores its best-matching vector); items with
   * no vectors come after the rest with score null. Without it: most recently updated first.
   */
  queryVector?: number[];
  /** Restart the TTL of the items returned. */
  refreshTtl: boolean;
}

/** Labels of `prefix` and `suffix` may be `*`, which matches any one label. */
export interface NamespaceQuery {
  prefix?: string[];
  suffix?: string[];
  /** Namespaces longer than this are cut to their first `maxDepth` labels (and deduplicated). */
  maxDepth?: number;
  limit: number;
  offset: number;
}

/** `now` is epoch ms; `refreshTtl` restarts the TTL of the item read. */
export type StoreRead = { refreshTtl: boolean; now: number };

export interface StoreRepo {
  /** Applies the writes in order, atomically: values, TTL deadlines and vectors. */
  write(org: OrgId, writes: StoreWrite[], now: number): Promise<void>;
  get(org: OrgId, namespace: string[], key: string, opts: StoreRead): Promise<StoreItemRecord | null>;
  search(org: OrgId, query: StoreSearchQuery, now: number): Promise<StoreSearchHit[]>;
  /** Distinct namespaces of live items, sorted label by label. */
  listNamespaces(org: OrgId, query: NamespaceQuery, now: number): Promise<string[][]>;
  /** Deletes every item expired at `now` (all organizations); returns how many. */
  sweepExpired(now: number): Promise<number>;
  /** When the next item expires (epoch ms), or null when none has a TTL. */
  nextExpiry(): Promise<number | null>;
}
