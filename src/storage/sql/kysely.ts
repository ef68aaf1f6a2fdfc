/**
 * Kysely's runtime values, loaded with `require` (its CommonJS build). The TypeScript loader Hangar
 * registers (tsx, bin/hangar.js) hooks every ESM import, and Kysely is ~280 modules: imported as ESM it
 * added ~0.5 s to the start of the process and of each executor thread; `require` is not hooked.
 * Types still come from "kysely" (`import type`), erased at run time.
 */
import { createRequire } from "node:module";
import type * as K from "kysely";

const kysely = createRequire(import.meta.url)("kysely") as typeof K;

export const {
  sql,
  CompiledQuery,
  Kysely,
  PostgresDialect,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} = kysely;
export type Kysely<DB> = K.Kysely<DB>;
export type CompiledQuery<R = unknown> = K.CompiledQuery<R>;
