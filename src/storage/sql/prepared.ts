/**
 * Queries compiled once: Kysely builds and compiles every query anew, which costs 20-80 µs for the hot
 * ones, as much as running them on SQLite (a micro-benchmark of 20k calls). `database.prepared` keeps
 * one `Prepared` per key.
 */
import type { Compilable } from "kysely";
import type { SqlDatabase, TxSteps } from "./database.js";
import { CompiledQuery } from "./kysely.js";

const SLOT = "\u0000hangar-slot:";

/** A placeholder in a query given to `Prepared`: the value bound to `name` at each execution. */
export const slot = (name: string): any => SLOT + name;

/** A row of `columns` for an INSERT given to `Prepared`, each the slot of its name (after `prefix`). */
export const slots = (columns: readonly string[], prefix = ""): any =>
  Object.fromEntries(columns.map((c) => [c, slot(prefix + c)]));

/**
 * A query whose shape never changes, built with Kysely's builder and compiled once, with `slot(name)`
 * placeholders (named by the column they stand for); each execution binds its values by name, in the
 * compiled SQL's order.
 */
export class Prepared<R, K extends string = string> {
  readonly #sql: string;
  readonly slots: readonly K[];

  constructor(query: Compilable<R>) {
    const compiled = query.compile();
    this.#sql = compiled.sql;
    this.slots = compiled.parameters.map((p) => {
      if (typeof p !== "string" || !p.startsWith(SLOT))
        throw new Error(`A prepared query has a parameter that is not a slot: ${compiled.sql}`);
      return p.slice(SLOT.length) as K;
    });
  }

  #bind(values: Record<K, unknown> | unknown[]): CompiledQuery<R> {
    return CompiledQuery.raw(this.#sql, Array.isArray(values) ? values : this.slots.map((s) => values[s]));
  }

  /** Outside a transaction. `values` by slot name, or already in the compiled SQL's order. */
  async execute(
    database: SqlDatabase,
    values: Record<K, unknown> | unknown[],
    unless?: () => boolean,
  ): Promise<R[]> {
    return (await database.execute(this.#bind(values), unless)).rows;
  }

  /** A write outside a transaction, committed with the others of this turn (`SqlDatabase.write`). */
  async write(
    database: SqlDatabase,
    values: Record<K, unknown> | unknown[],
    unless?: () => boolean,
  ): Promise<void> {
    await database.write(this.#bind(values), unless);
  }

  /** In a transaction: its rows. */
  *rows(values: Record<K, unknown> | unknown[]): TxSteps<R[]> {
    return (yield this.#bind(values)).rows;
  }

  /** In a transaction: its first row. */
  *first(values: Record<K, unknown> | unknown[]): TxSteps<R | undefined> {
    return (yield this.#bind(values)).rows[0];
  }

  /** In a transaction: how many rows the write changed. */
  *changed(values: Record<K, unknown> | unknown[]): TxSteps<number> {
    return Number((yield this.#bind(values)).numAffectedRows ?? 0n);
  }
}
