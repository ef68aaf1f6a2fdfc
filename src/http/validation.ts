import type { Context } from "hono";
import type { z } from "zod";
import { type ValidationIssue, validationFailed } from "../errors.js";
import type { Where } from "./json-limits.js";
import { parseJson, storableProblem } from "./json-limits.js";

function issuesOf(where: Where, error: z.ZodError): ValidationIssue[] {
  return error.issues.map((issue) => ({
    loc: [where, ...issue.path.map((p) => (typeof p === "number" ? p : String(p)))],
    msg: issue.message,
    type: issue.code,
  }));
}

export function parse<S extends z.ZodType>(where: Where, schema: S, value: unknown): z.output<S> {
  const problem = storableProblem(where, value);
  if (problem) throw validationFailed([problem]);
  return validate(where, schema, value);
}

/** `value` against `schema` alone (it passed `storableProblem` already). */
function validate<S extends z.ZodType>(where: Where, schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw validationFailed(issuesOf(where, result.error));
  return result.data;
}

/**
 * The JSON body validated by `schema`. An empty body counts as `{}` (the SDK sends none for some
 * calls); malformed JSON is a 422 naming the body, like any other invalid input.
 */
export async function body<S extends z.ZodType>(c: Context, schema: S): Promise<z.output<S>> {
  const text = await c.req.text();
  if (text.trim() === "") return parse("body", schema, {});
  const parsed = parseJson(text);
  if ("problem" in parsed) throw validationFailed([parsed.problem]);
  return validate("body", schema, parsed.value);
}

export const query = <S extends z.ZodType>(c: Context, schema: S): z.output<S> =>
  parse("query", schema, c.req.query());

/**
 * `query`, with a parameter given more than once as the list of its values (`a=x&a=y` → ["x", "y"]),
 * as the SDKs send lists; once, it stays a string.
 */
export const queryWithLists = <S extends z.ZodType>(c: Context, schema: S): z.output<S> =>
  parse(
    "query",
    schema,
    Object.fromEntries(Object.entries(c.req.queries()).map(([k, v]) => [k, v.length === 1 ? v[0] : v])),
  );

export const params = <S extends z.ZodType>(c: Context, schema: S): z.output<S> =>
  parse("path", schema, c.req.param());
