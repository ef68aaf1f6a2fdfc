/**
 * What the sandbox area's repositories (volumes-templates.ts, boxes.ts) share: the organization's
 * transaction, and the pieces of their queries. Every rule that must hold under concurrency (unique
 * names, grow-only sizes, the storage quota, no deleting a mounted volume, a warm box claimed once) is
 * checked and written in one `inOrg` transaction; UNIQUE (org_id, name) is the backstop.
 */
import type { ExpressionBuilder, SelectQueryBuilder } from "kysely";
import type * as Port from "../../sandbox-ports.js";
import { type Executor, nameContains, SqlRepo, type TxSteps } from "../database.js";
import type { Dialect } from "../dialect.js";
import { sql } from "../kysely.js";
import type { Tables } from "../tables.js";

/** The advisory-lock space of the sandbox area's organization locks. */
const ORG_LOCK_SPACE = 726855;

export abstract class SandboxRepo extends SqlRepo {
  /**
   * Runs `body` in one transaction that first takes the organization's lock, so the sandbox area's
   * check-then-write transactions of one organization run one after the other: SQLite's IMMEDIATE
   * transaction already holds the write lock; Postgres takes an advisory lock.
   */
  protected inOrg<T>(org: string, body: (tx: Executor, dialect: Dialect) => TxSteps<T>): Promise<T> {
    return this.transaction(function* (tx) {
      const lock = this.dialect.advisoryLock(ORG_LOCK_SPACE, org);
      // A raw statement is not `Compilable` without a builder: compiled with the transaction's.
      if (lock) yield lock.compile(tx);
      return yield* body(tx, this.dialect);
    });
  }
}

/**
 * The write's result, or undefined when a unique constraint refused it (a concurrent write took the
 * name). On SQLite the transaction goes on; on Postgres the failed statement aborted it, so the caller
 * returns at once and the transaction rejects (its COMMIT rolls back).
 */
export function* unlessDuplicate<T>(dialect: Dialect, write: TxSteps<T>): TxSteps<T | undefined> {
  try {
    return yield* write;
  } catch (err) {
    if (dialect.isUniqueViolation(err)) return undefined;
    throw err;
  }
}

/** Where the row is the organization's and is called `name`. */
export const orgNamed = (org: string, name: string) => (eb: ExpressionBuilder<any, any>) =>
  eb.and([eb("org_id", "=", org), eb("name", "=", name)]);

/**
 * The query of a page in creation order (`<alias>.seq`) of the rows whose name contains
 * `q.name_contains` and whose metadata matches `q.auth`, one row more than asked for: `toPage` tells
 * from it whether there are more.
 */
export const pageQuery = <O>(
  qb: SelectQueryBuilder<Tables, any, O>,
  dialect: Dialect,
  alias: string,
  q: Port.SandboxListQuery,
) =>
  qb
    .$if(!!q.name_contains, (b) => b.where(nameContains(`${alias}.name`, q.name_contains!)))
    .$if(!!q.auth, (b) => b.where(dialect.authFilter(`${alias}.metadata`, q.auth!)))
    .orderBy(sql.ref(`${alias}.seq`))
    .limit(q.limit + 1)
    .offset(q.offset);

/** The page in `rows` (`pageQuery`'s), its rows made records by `to`. */
export const toPage = <O, T>(
  rows: O[],
  q: Port.SandboxListQuery,
  to: (row: O) => T,
): Port.SandboxPage<T> => ({
  items: rows.slice(0, q.limit).map(to),
  hasMore: rows.length > q.limit,
});

/** `pageQuery` run outside a transaction, and its page. */
export const page = async <O, T>(
  qb: SelectQueryBuilder<Tables, any, O>,
  dialect: Dialect,
  alias: string,
  q: Port.SandboxListQuery,
  to: (row: O) => T,
) => toPage(await pageQuery(qb, dialect, alias, q).execute(), q, to);

/** One mount of the volume (`volume_id`) or of the template (`template_id`), if there is one. */
export const mounted = (ex: Executor, column: "volume_id" | "template_id", id: string) =>
  ex.selectFrom("sandbox_template_mounts").select(sql.lit(1).as("one")).where(column, "=", id).limit(1);

/** The metadata column as written (JSON text, tables.ts). */
export const storedMetadata = (metadata: Record<string, unknown> | undefined) =>
  JSON.stringify(metadata ?? {});
export const templateRow = (ex: Executor, org: string, name: string) =>
  ex.selectFrom("sandbox_templates").selectAll().where(orgNamed(org, name));
