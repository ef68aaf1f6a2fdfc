/**
 * The long-term memory store: LangGraph's `BaseStore` over the storage port (`StoreRepo`), so the one
 * store serves the `/store/*` routes and the graphs (`config.store`, `getStore()`), and a Postgres
 * adapter only has to implement the port.
 *
 * Here live the rules that do not depend on the database: namespace and filter validation, TTL
 * defaults, and semantic indexing (which texts of an item are embedded, with the embedding function
 * from langgraph.json `store.index`; see config.ts).
 */
import {
  BaseStore,
  type Item,
  type ListNamespacesOperation,
  type Operation,
  type OperationResults,
  type SearchItem,
} from "@langchain/langgraph-checkpoint";
import { validationFailed } from "../../errors.js";
import type {
  NamespaceQuery,
  OrgId,
  StoreFilterCondition,
  StoreFilterOp,
  StoreItemRecord,
  StoreRepo,
  StoreSearchHit,
  StoreVector,
  StoreWrite,
} from "../../storage/ports.js";

/** An embedding function with the settings of `store.index`. */
export interface Embedder {
  dims: number;
  /** Paths of the texts embedded by default (`["$"]`: the whole value as JSON). */
  fields: string[];
  embedDocuments(texts: string[]): Promise<number[][]>;
  embedQuery(text: string): Promise<number[]>;
}

export interface StoreSettings {
  /** Semantic search; null = `query` is ignored and nothing is embedded. */
  index: Embedder | null;
  /** TTL (minutes) of items written without one; null = they never expire. */
  defaultTtlMinutes: number | null;
  /** Whether reads restart items' TTL when the caller does not say (`refresh_ttl`). */
  refreshOnRead: boolean;
}

export const DEFAULT_STORE_SETTINGS: StoreSettings = {
  index: null,
  defaultTtlMinutes: null,
  refreshOnRead: true,
};

export interface PutOptions {
  /** false: do not index; a list of paths: index these instead of `store.index.fields`. */
  index?: false | string[] | null;
  /** Minutes; null = never expires; undefined = the configured default. */
  ttl?: number | null;
}

export interface SearchOptions {
  filter?: Record<string, unknown> | null;
  limit?: number;
  offset?: number;
  query?: string | null;
  refreshTtl?: boolean | null;
}

/** A problem with an input, as a path inside that input and a message (zod refinements reuse these). */
export interface InputProblem {
  path: (string | number)[];
  message: string;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** Why `namespace` is not a valid item namespace (or prefix, with `allowEmpty`), or null. */
export function namespaceProblem(namespace: string[], opts: { allowEmpty?: boolean } = {}): string | null {
  if (namespace.length === 0) return opts.allowEmpty ? null : "Namespace is required";
  if (namespace.some((label) => label === "" || label.includes(".") || label.includes("\0"))) {
    return `Namespace labels cannot be empty or contain periods. Received: ${namespace.join(".").slice(0, 200)}`;
  }
  if (Buffer.byteLength(namespace.join(".")) > MAX_STORE_KEY_BYTES)
    return `Namespace is longer than ${MAX_STORE_KEY_BYTES} bytes (its labels joined with periods)`;
  return null;
}

/**
 * The most bytes (UTF-8) of an item's key, and of its namespace joined with periods: together they key
 * the item in an index, and Postgres refuses index entries past ~2,700 bytes. The same on SQLite.
 */
export const MAX_STORE_KEY_BYTES = 1024;

/** The longest TTL an item may have: 100 years, in minutes (its expiry must stay a date). */
export const MAX_TTL_MINUTES = 100 * 365 * 24 * 60;

export function keyProblem(key: unknown): string | null {
  if (typeof key !== "string") return "must be a string";
  if (Buffer.byteLength(key) > MAX_STORE_KEY_BYTES) return `must be at most ${MAX_STORE_KEY_BYTES} bytes`;
  return null;
}

const OPERATORS: Record<string, StoreFilterOp> = {
  $eq: "eq",
  $ne: "ne",
  $gt: "gt",
  $gte: "gte",
  $lt: "lt",
  $lte: "lte",
  $in: "in",
  $nin: "nin",
};

/**
 * A search filter → conditions. `{field: value}` is equality (an object value matches by
 * containment); `{field: {$op: operand, …}}` uses operators ($eq $ne $gt $gte $lt $lte $in $nin).
 */
export function parseStoreFilter(filter: Record<string, unknown> | null | undefined): {
  conditions: StoreFilterCondition[];
  problems: InputProblem[];
} {
  const conditions: StoreFilterCondition[] = [];
  const problems: InputProblem[] = [];
  for (const [field, spec] of Object.entries(filter ?? {})) {
    if (spec === undefined) continue;
    const keys = isPlainObject(spec) ? Object.keys(spec) : [];
    if (keys.length === 0 || !keys.every((k) => k.startsWith("$"))) {
      conditions.push({ field, op: "eq", value: spec });
      continue;
    }
    for (const [key, operand] of Object.entries(spec as Record<string, unknown>)) {
      const op = OPERATORS[key];
      if (!op) {
        problems.push({
          path: [field, key],
          message: `unknown operator ${key}; use one of ${Object.keys(OPERATORS).join(", ")}`,
        });
      } else if ((op === "in" || op === "nin") && !Array.isArray(operand)) {
        problems.push({ path: [field, key], message: `${key} takes a list of values` });
      } else if (
        (op === "gt" || op === "gte" || op === "lt" || op === "lte") &&
        !(typeof operand === "string" || (typeof operand === "number" && Number.isFinite(operand)))
      ) {
        problems.push({ path: [field, key], message: `${key} takes a number or a string` });
      } else {
        conditions.push({ field, op, value: operand });
      }
    }
  }
  return { conditions, problems };
}

function tokenizePath(path: string): string[] {
  const tokens: string[] = [];
  let current = "";
  const flush = () => {
    if (current) tokens.push(current);
    current = "";
  };
  for (let i = 0; i < path.length; i++) {
    const ch = path[i];
    if (ch === "[" || ch === "{") {
      const end = path.indexOf(ch === "[" ? "]" : "}", i);
      if (end !== -1) {
        flush();
        tokens.push(path.slice(i, end + 1));
        i = end;
        continue;
      }
    }
    if (ch === ".") flush();
    else current += ch;
  }
  flush();
  return tokens;
}

function extractTexts(node: unknown, tokens: string[], pos: number): string[] {
  if (pos === tokens.length) {
    if (typeof node === "string") return [node];
    if (typeof node === "number" || typeof node === "boolean") return [String(node)];
    return node !== null && typeof node === "object" ? [JSON.stringify(node)] : [];
  }
  const token = tokens[pos];
  const rest = (child: unknown) => extractTexts(child, tokens, pos + 1);
  if (token.startsWith("[")) {
    if (!Array.isArray(node)) return [];
    const inner = token.slice(1, -1).trim();
    if (inner === "*") return node.flatMap(rest);
    const index = Number(inner);
    if (!Number.isInteger(index)) return [];
    const at = index < 0 ? node.length + index : index;
    return at >= 0 && at < node.length ? rest(node[at]) : [];
  }
  if (token.startsWith("{")) {
    const names = token
      .slice(1, -1)
      .split(",")
      .map((n) => n.trim())
      .filter(Boolean);
    return names.flatMap((name) => extractTexts(node, [...tokenizePath(name), ...tokens.slice(pos + 1)], 0));
  }
  if (token === "*") {
    if (Array.isArray(node)) return node.flatMap(rest);
    return isPlainObject(node) ? Object.values(node).flatMap(rest) : [];
  }
  return isPlainObject(node) && Object.hasOwn(node, token) ? rest(node[token]) : [];
}

/**
 * The texts of `value` at `path`: `$` is the whole value as JSON; `a.b`, `a[0]`, `a[-1]`, `a[*].b`,
 * `*` (every field) and `{a,b}` (several fields) select parts. Objects found are embedded as JSON.
 */
export function textsAt(value: Record<string, unknown>, path: string): string[] {
  const texts = path === "$" ? [JSON.stringify(value)] : extractTexts(value, tokenizePath(path), 0);
  return texts.filter((t) => t.trim() !== "");
}

const toLangGraphItem = (r: StoreItemRecord): Item => ({
  namespace: r.namespace,
  key: r.key,
  value: r.value,
  createdAt: new Date(r.created_at),
  updatedAt: new Date(r.updated_at),
});

function invalid(path: (string | number)[], message: string): never {
  throw validationFailed([{ loc: path, msg: message, type: "value_error" }]);
}

/**
 * LangGraph's `BaseStore` over `StoreRepo`, scoped to one organization (`withOrg` gives the view of
 * another). Besides the BaseStore API it has the per-call options the HTTP API carries (`ttl`,
 * `refresh_ttl`, per-item `index`).
 */
export class HangarStore extends BaseStore {
  readonly #repo: StoreRepo;
  readonly #org: OrgId;
  readonly #settings: StoreSettings;
  readonly #clock: () => number;
  /** Told the deadline of every item written with a TTL (the sweeper arms its timer with it). */
  onExpiry?: (at: number) => void;

  constructor(
    repo: StoreRepo,
    org: OrgId,
    settings: StoreSettings = DEFAULT_STORE_SETTINGS,
    clock: () => number = Date.now,
  ) {
    super();
    this.#repo = repo;
    this.#org = org;
    this.#settings = settings;
    this.#clock = clock;
  }

  get settings(): StoreSettings {
    return this.#settings;
  }

  /** The same store seen by another organization. */
  withOrg(org: OrgId): HangarStore {
    if (org === this.#org) return this;
    const view = new HangarStore(this.#repo, org, this.#settings, this.#clock);
    view.onExpiry = (at) => this.onExpiry?.(at);
    return view;
  }

  async #vector(text: string): Promise<number[]> {
    const [vector] = this.#checkVectors(
      this.#settings.index!,
      [await this.#settings.index!.embedQuery(text)],
      1,
    );
    return vector;
  }

  #checkVectors(index: Embedder, vectors: unknown, expected: number): number[][] {
    const ok =
      Array.isArray(vectors) &&
      vectors.length === expected &&
      vectors.every(
        (v) =>
          Array.isArray(v) &&
          v.length === index.dims &&
          v.every((x) => typeof x === "number" && Number.isFinite(x)),
      );
    if (!ok) {
      throw new Error(
        `store.index: the embedding function must return ${expected} vector(s) of ${index.dims} finite numbers (store.index.dims)`,
      );
    }
    return vectors as number[][];
  }

  async #prepareWrite(
    namespace: string[],
    key: string,
    value: unknown,
    opts: PutOptions,
  ): Promise<StoreWrite> {
    const problem = namespaceProblem(namespace);
    if (problem) invalid(["namespace"], problem);
    const badKey = keyProblem(key);
    if (badKey) invalid(["key"], badKey);
    if (value === null) return { namespace, key, value: null, ttlMinutes: null, vectors: [] };
    if (!isPlainObject(value)) invalid(["value"], "must be an object");
    const ttl = opts.ttl === undefined ? this.#settings.defaultTtlMinutes : opts.ttl;
    if (ttl !== null && !(typeof ttl === "number" && ttl > 0 && ttl <= MAX_TTL_MINUTES))
      invalid(["ttl"], `must be a positive number of minutes up to ${MAX_TTL_MINUTES} (100 years), or null`);

    const vectors: StoreVector[] = [];
    const index = this.#settings.index;
    if (index && opts.index !== false) {
      const paths = Array.isArray(opts.index) ? opts.index : index.fields;
      if (paths.some((p) => Buffer.byteLength(p) > MAX_STORE_KEY_BYTES))
        invalid(["index"], `field paths must be at most ${MAX_STORE_KEY_BYTES} bytes`);
      const fields: string[] = [];
      const texts: string[] = [];
      for (const path of paths) {
        const found = textsAt(value, path);
        found.forEach((text, i) => {
          fields.push(found.length > 1 ? `${path}.${i}` : path);
          texts.push(text);
        });
      }
      if (texts.length) {
        const embedded = this.#checkVectors(index, await index.embedDocuments(texts), texts.length);
        for (const [i, vector] of embedded.entries()) vectors.push({ field: fields[i], vector });
      }
    }
    return { namespace, key, value, ttlMinutes: ttl, vectors };
  }

  async #write(writes: StoreWrite[]): Promise<void> {
    if (!writes.length) return;
    const now = this.#clock();
    await this.#repo.write(this.#org, writes, now);
    for (const w of writes) {
      if (w.value !== null && w.ttlMinutes !== null) this.onExpiry?.(now + w.ttlMinutes * 60_000);
    }
  }

  /** Writes an item (an existing one is replaced); its TTL starts now. */
  async putItem(
    namespace: string[],
    key: string,
    value: Record<string, unknown>,
    opts: PutOptions = {},
  ): Promise<void> {
    await this.#write([await this.#prepareWrite(namespace, key, value, opts)]);
  }

  async deleteItem(namespace: string[], key: string): Promise<void> {
    await this.#write([await this.#prepareWrite(namespace, key, null, {})]);
  }

  async getItem(
    namespace: string[],
    key: string,
    opts: { refreshTtl?: boolean | null } = {},
  ): Promise<StoreItemRecord | null> {
    const problem = namespaceProblem(namespace);
    if (problem) invalid(["namespace"], problem);
    return this.#repo.get(this.#org, namespace, key, {
      refreshTtl: opts.refreshTtl ?? this.#settings.refreshOnRead,
      now: this.#clock(),
    });
  }

  /**
   * Items under `namespacePrefix` matching `filter`; with a `query` and `store.index` configured,
   * ranked by similarity (each hit carries `score`), else most recently updated first.
   */
  async searchItems(namespacePrefix: string[], opts: SearchOptions = {}): Promise<StoreSearchHit[]> {
    const problem = namespaceProblem(namespacePrefix, { allowEmpty: true });
    if (problem) invalid(["namespace_prefix"], problem);
    const { conditions, problems } = parseStoreFilter(opts.filter);
    if (problems.length) {
      throw validationFailed(
        problems.map((p) => ({ loc: ["filter", ...p.path], msg: p.message, type: "value_error" })),
      );
    }
    const query = opts.query?.trim() ? opts.query : undefined;
    return this.#repo.search(
      this.#org,
      {
        namespacePrefix,
        filter: conditions,
        limit: opts.limit ?? 10,
        offset: opts.offset ?? 0,
        queryVector: query && this.#settings.index ? await this.#vector(query) : undefined,
        refreshTtl: opts.refreshTtl ?? this.#settings.refreshOnRead,
      },
      this.#clock(),
    );
  }

  /** Distinct namespaces (labels of prefix/suffix may be `*`), sorted, cut to `maxDepth` labels. */
  async namespaces(query: Partial<NamespaceQuery>): Promise<string[][]> {
    return this.#repo.listNamespaces(
      this.#org,
      { ...query, limit: query.limit ?? 100, offset: query.offset ?? 0 },
      this.#clock(),
    );
  }

  /**
   * BaseStore's one abstract method; LangGraph's `get`/`search`/`put`/`delete`/`listNamespaces` (and
   * the batching wrapper graphs get) all come through here. Operations apply in order; consecutive
   * puts are written in one transaction. A `ttl` or `refreshTtl` on an operation is honoured too.
   */
  async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const results: unknown[] = [];
    let pending: StoreWrite[] = [];
    const flush = async () => {
      await this.#write(pending);
      pending = [];
    };
    for (const op of operations as Operation[]) {
      const extra = op as { ttl?: number | null; refreshTtl?: boolean; index?: false | string[] };
      if ("value" in op) {
        pending.push(
          await this.#prepareWrite(op.namespace, op.key, op.value, { index: extra.index, ttl: extra.ttl }),
        );
        results.push(undefined);
        continue;
      }
      await flush();
      if ("namespacePrefix" in op) {
        const hits = await this.searchItems(op.namespacePrefix, { ...op, refreshTtl: extra.refreshTtl });
        results.push(
          hits.map((h): SearchItem => {
            const item: SearchItem = toLangGraphItem(h);
            if (h.score !== undefined) item.score = h.score ?? undefined;
            return item;
          }),
        );
      } else if ("key" in op) {
        const item = await this.getItem(op.namespace, op.key, { refreshTtl: extra.refreshTtl });
        results.push(item ? toLangGraphItem(item) : null);
      } else {
        const list = op as ListNamespacesOperation;
        const prefix = list.matchConditions?.find((c) => c.matchType === "prefix")?.path;
        const suffix = list.matchConditions?.find((c) => c.matchType === "suffix")?.path;
        results.push(
          await this.namespaces({
            prefix,
            suffix,
            maxDepth: list.maxDepth,
            limit: list.limit,
            offset: list.offset,
          }),
        );
      }
    }
    await flush();
    return results as OperationResults<Op>;
  }
}
