/**
 * JSON containment (`{a: 1, b: {c: "x"}}` ⊆ column) for Postgres, with the SQLite adapter's semantics
 * (sqlite/json-filter.ts): objects match key by key, recursively; `null` matches a JSON null; arrays
 * and every other value match only when equal. Everything but arrays goes into one `column @> $n`
 * (served by the GIN index); arrays are compared whole with `#>`, because `@>` would also accept a
 * longer array that merely contains the filter's elements.
 */
import { type AuthFilter, conditionOf } from "../../auth/filter.js";

export interface SqlFragment {
  sql: string;
  params: unknown[];
}

/** Collects parameters and hands out their `$n` placeholders. */
export class Params {
  readonly values: unknown[] = [];
  constructor(start: unknown[] = []) {
    this.values.push(...start);
  }
  /** Adds a value and returns its placeholder. */
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

export function jsonContains(column: string, filter: Record<string, unknown>, params: Params): string {
  const clauses: string[] = [];
  const arrays: [string[], unknown[]][] = [];
  const split = (obj: Record<string, unknown>, path: string[]): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(obj)) {
      if (Array.isArray(value)) arrays.push([[...path, key], value]);
      else if (value !== null && typeof value === "object")
        out[key] = split(value as Record<string, unknown>, [...path, key]);
      else out[key] = value;
    }
    return out;
  };
  const contained = split(filter, []);
  if (Object.keys(contained).length)
    clauses.push(`${column} @> ${params.add(JSON.stringify(contained))}::jsonb`);
  for (const [path, value] of arrays) {
    clauses.push(`${column} #> ${params.add(path)}::text[] = ${params.add(JSON.stringify(value))}::jsonb`);
  }
  return clauses.length ? clauses.join(" AND ") : "TRUE";
}

/**
 * An authorization filter (src/auth/filter.ts) as a Postgres condition on a metadata column: top-level
 * keys equal to a scalar (`@>`, served by the GIN index), or lists containing every given scalar.
 */
export function authClause(column: string, filter: AuthFilter, params: Params): string {
  const clauses: string[] = [];
  for (const [key, condition] of Object.entries(filter)) {
    const c = conditionOf(condition);
    if ("eq" in c) {
      clauses.push(`${column} @> ${params.add(JSON.stringify({ [key]: c.eq }))}::jsonb`);
      continue;
    }
    const field = `${column} -> ${params.add(key)}::text`;
    clauses.push(
      `jsonb_typeof(${field}) = 'array'`,
      `${field} @> ${params.add(JSON.stringify(c.contains))}::jsonb`,
    );
  }
  return clauses.length ? clauses.join(" AND ") : "TRUE";
}
