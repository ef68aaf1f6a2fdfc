/**
 * What JSON a request may carry, the same on every storage engine (README: "Input limits"). Pure: the
 * routes (`validation.ts`) and the JSON-RPC endpoints (`agents/jsonrpc.ts`) both check input here.
 */
import type { ValidationIssue } from "../errors.js";

export type Where = "body" | "query" | "path";

/**
 * How deep JSON in a request may nest. Stored JSON must stay readable by both engines' JSON functions
 * (SQLite's stop at 1,000 levels, Postgres' at its stack depth), so deeper input is refused at the door
 * instead of breaking every later search that touches the row.
 */
export const MAX_JSON_DEPTH = 100;

/** A lone UTF-16 surrogate: not Unicode, and refused by Postgres' JSON and text types. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function stringProblem(s: string): string | null {
  if (s.includes("\u0000")) return "must not contain NUL characters (\\u0000)";
  if (LONE_SURROGATE.test(s)) return "must be valid Unicode (it has a lone surrogate)";
  return null;
}

/**
 * The first reason `value` (parsed JSON, or path and query parameters) cannot be stored as it is on
 * every engine: nesting deeper than MAX_JSON_DEPTH, or a string or key with NUL or a lone surrogate.
 * Iterative, so no input can exhaust the stack.
 */
export function storableProblem(where: Where, value: unknown): ValidationIssue | null {
  type Node = { value: unknown; depth: number; key?: string | number; parent?: Node };
  const pathOf = (node: Node | undefined): (string | number)[] => {
    const path: (string | number)[] = [];
    for (let n = node; n?.key !== undefined; n = n.parent) path.unshift(n.key);
    return path;
  };
  const stack: Node[] = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const node = stack.pop() as Node;
    const v = node.value;
    if (typeof v === "string") {
      const msg = stringProblem(v);
      if (msg) return { loc: [where, ...pathOf(node).slice(0, 8)], msg, type: "string_invalid" };
      continue;
    }
    if (v === null || typeof v !== "object") continue;
    if (node.depth >= MAX_JSON_DEPTH) {
      // Name the field (the first levels of the path), not a path a hundred keys long.
      const path = pathOf(node);
      return {
        loc: [where, ...path.slice(0, 2)],
        msg: `nests deeper than ${MAX_JSON_DEPTH} levels, the limit for JSON in a request`,
        type: "too_deep",
      };
    }
    const entries: [string | number, unknown][] = Array.isArray(v)
      ? v.map((x, i) => [i, x])
      : Object.entries(v);
    for (const [key, child] of entries) {
      const childNode = { value: child, depth: node.depth + 1, key, parent: node };
      if (typeof key === "string") {
        const msg = stringProblem(key);
        if (msg)
          return {
            loc: [where, ...pathOf(childNode).slice(0, 8)],
            msg: `key ${msg}`,
            type: "string_invalid",
          };
      }
      stack.push(childNode);
    }
  }
  return null;
}

/** Request text parsed as JSON, or why it cannot be taken: malformed, or not storable (`storableProblem`). */
export function parseJson(text: string): { value: unknown } | { problem: ValidationIssue } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const msg = `Malformed JSON in request body: ${(err as Error).message}`;
    return { problem: { loc: ["body"], msg, type: "json_invalid" } };
  }
  const problem = storableProblem("body", value);
  return problem ? { problem } : { value };
}
