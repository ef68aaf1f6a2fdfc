/**
 * The filters authorization handlers return: which resources (by their `metadata`) exist for a user.
 *
 *   {owner: "alice"}                   metadata.owner equals "alice"
 *   {owner: {$eq: "alice"}}            the same
 *   {teams: {$contains: "red"}}        metadata.teams is a list holding "red"
 *   {teams: {$contains: ["a", "b"]}}   ... holding both
 *
 * Values are JSON scalars (string, number, boolean). Keys are top-level metadata keys; several keys must
 * all match. Storage applies these in its queries (`dialect.authFilter`, src/storage/sql/dialect.ts);
 * `matchesFilter` is the same rule in memory, for a row already at hand.
 */
export type AuthScalar = string | number | boolean;
export type AuthCondition = AuthScalar | { $eq: AuthScalar } | { $contains: AuthScalar | AuthScalar[] };
export type AuthFilter = Record<string, AuthCondition>;

const isScalar = (v: unknown): v is AuthScalar =>
  typeof v === "string" || (typeof v === "number" && Number.isFinite(v)) || typeof v === "boolean";

/** Why `value` is not a filter this server can apply, or null. */
export function filterProblem(value: object): string | null {
  for (const [key, condition] of Object.entries(value)) {
    if (isScalar(condition)) continue;
    if (typeof condition === "object" && condition !== null && !Array.isArray(condition)) {
      const ops = Object.keys(condition);
      if (ops.length === 1 && ops[0] === "$eq" && isScalar((condition as { $eq: unknown }).$eq)) continue;
      const contains = (condition as { $contains?: unknown }).$contains;
      if (ops.length === 1 && ops[0] === "$contains") {
        if (isScalar(contains)) continue;
        if (Array.isArray(contains) && contains.every(isScalar)) continue;
      }
    }
    return `"${key}": expected a string, number or boolean, {"$eq": value} or {"$contains": value or list}`;
  }
  return null;
}

/** The scalars a condition on one key requires: equal to `eq`, or a list containing every one of `contains`. */
export function conditionOf(condition: AuthCondition): { eq: AuthScalar } | { contains: AuthScalar[] } {
  if (isScalar(condition)) return { eq: condition };
  if ("$eq" in condition) return { eq: condition.$eq };
  return { contains: Array.isArray(condition.$contains) ? condition.$contains : [condition.$contains] };
}

export function matchesFilter(
  metadata: Record<string, unknown> | null | undefined,
  filter?: AuthFilter,
): boolean {
  if (!filter) return true;
  for (const [key, condition] of Object.entries(filter)) {
    const actual = metadata?.[key];
    const c = conditionOf(condition);
    if ("eq" in c) {
      if (actual !== c.eq) return false;
    } else if (!Array.isArray(actual) || !c.contains.every((v) => actual.includes(v))) return false;
  }
  return true;
}
