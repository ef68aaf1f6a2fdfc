import type { Context } from "hono";
import type { z } from "zod";
import { type ValidationIssue, validationFailed } from "../errors.js";

type Where = "body" | "query" | "path";

function issuesOf(where: Where, error: z.ZodError): ValidationIssue[] {
  return error.issues.map((issue) => ({
    loc: [where, ...issue.path.map((p) => (typeof p === "number" ? p : String(p)))],
    msg: issue.message,
    type: issue.code,
  }));
}

export function parse<S extends z.ZodType>(where: Where, schema: S, value: unknown): z.output<S> {
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
  let value: unknown = {};
  if (text.trim() !== "") {
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw validationFailed([
        {
          loc: ["body"],
          msg: `Malformed JSON in request body: ${(err as Error).message}`,
          type: "json_invalid",
        },
      ]);
    }
  }
  return parse("body", schema, value);
}

export const query = <S extends z.ZodType>(c: Context, schema: S): z.output<S> =>
  parse("query", schema, c.req.query());

export const params = <S extends z.ZodType>(c: Context, schema: S): z.output<S> =>
  parse("path", schema, c.req.param());
