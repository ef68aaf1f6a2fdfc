/**
 * JSON containment (`{a: 1, b: {c: "x"}}` ⊆ column) as SQLite conditions on json_extract, so that
 * search, count and pagination all happen in SQL. Objects recurse key by key; arrays and other
 * values compare as canonical JSON.
 */
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
