/**
 * JSON containment (`{a: 1, b: {c: "x"}}` ⊆ column) as SQLite conditions on json_extract, so that
 * search, count and pagination all happen in SQL. Objects recurse key by key; arrays and other
 * values compare as canonical JSON.
 */
import { type AuthFilter, type AuthScalar, conditionOf } from "../../auth/filter.js";

export interface SqlFragment {
  sql: string;
  params: unknown[];
}

const pathKey = (key: string) => `"${key.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;

export function jsonContains(column: string, filter: Record<string, unknown>, prefix = "$"): SqlFragment {
  const clauses: string[] = [];
  const params: unknown[] = [];
  for (const [key, value] of Object.entries(filter)) {
    const p = `${prefix}.${pathKey(key)}`;
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      const nested = jsonContains(column, value as Record<string, unknown>, p);
      clauses.push(nested.sql === "1" ? `json_type(${column}, ?) = 'object'` : `(${nested.sql})`);
      if (nested.sql === "1") params.push(p);
      else params.push(...nested.params);
    } else if (value === null) {
      clauses.push(`json_type(${column}, ?) = 'null'`);
      params.push(p);
    } else if (typeof value === "boolean") {
      clauses.push(`json_type(${column}, ?) = ?`);
      params.push(p, value ? "true" : "false");
    } else if (typeof value === "string" || typeof value === "number") {
      clauses.push(`json_extract(${column}, ?) = ?`);
      params.push(p, value);
    } else {
      clauses.push(`json(json_extract(${column}, ?)) = json(?)`);
      params.push(p, JSON.stringify(value));
    }
  }
  return { sql: clauses.length ? clauses.join(" AND ") : "1", params };
}

/**
 * An authorization filter (src/auth/filter.ts) as a SQLite condition on a metadata column: top-level
 * keys equal to a scalar, or lists containing every given scalar.
 */
export function authClause(column: string, filter: AuthFilter): SqlFragment {
  const clauses: string[] = [];
  const params: unknown[] = [];
  for (const [key, condition] of Object.entries(filter)) {
    const path = `$.${pathKey(key)}`;
    const c = conditionOf(condition);
    if ("eq" in c) {
      const [type, atom] = jsonAtom(c.eq);
      clauses.push(`(json_type(${column}, ?) = ? AND json_extract(${column}, ?) = ?)`);
      params.push(path, type, path, atom);
      continue;
    }
    clauses.push(`json_type(${column}, ?) = 'array'`);
    params.push(path);
    for (const v of c.contains) {
      clauses.push(`EXISTS (SELECT 1 FROM json_each(${column}, ?) e WHERE e.type = ? AND e.atom = ?)`);
      params.push(path, ...jsonAtom(v));
    }
  }
  return { sql: clauses.length ? clauses.join(" AND ") : "1", params };
}

/** How SQLite's JSON functions see a scalar: its json_type and its SQL value (booleans are 1 and 0). */
function jsonAtom(v: AuthScalar): [string, string | number] {
  if (typeof v === "boolean") return [v ? "true" : "false", v ? 1 : 0];
  if (typeof v === "number") return [Number.isInteger(v) ? "integer" : "real", v];
  return ["text", v];
}
