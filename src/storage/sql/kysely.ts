/**
 * Kysely's runtime values, loaded with `require` (its CommonJS build): the TypeScript loader (tsx,
 * bin/hangar.js) hooks every ESM import, and Kysely's ~280 modules imported as ESM added ~0.5 s to the
 * start of the process and of each executor thread. Types still come from "kysely" (`import type`).
 */
import { createRequire } from "node:module";
import type * as K from "kysely";

export const kysely = createRequire(import.meta.url)("kysely") as typeof K;

export const { sql, CompiledQuery, Kysely } = kysely;
export type Kysely<DB> = K.Kysely<DB>;
export type CompiledQuery<R = unknown> = K.CompiledQuery<R>;

/** An upsert's `SET column = excluded.column`, for each of `columns`. */
export const fromExcluded = (columns: readonly string[]) => (eb: K.ExpressionBuilder<any, any>) =>
  Object.fromEntries(columns.map((c) => [c, eb.ref(`excluded.${c}`)]));
