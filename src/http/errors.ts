import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { type ErrorKind, HangarError, StatusError } from "../errors.js";
import type { Logger } from "../logger.js";

function statusOf(kind: ErrorKind): ContentfulStatusCode {
  switch (kind) {
    case "not_found":
      return 404;
    case "conflict":
      return 409;
    case "bad_request":
      return 400;
    case "unauthorized":
      return 401;
    case "forbidden":
      return 403;
    case "validation":
      return 422;
    case "quota":
      return 429;
    case "timeout":
      return 408;
    case "too_large":
      return 413;
    case "unavailable":
      return 503;
    case "gateway_timeout":
      return 504;
    default: {
      const unreachable: never = kind;
      throw new Error(`unmapped error kind ${unreachable}`);
    }
  }
}

/** The one place errors become responses (DESIGN.md decision 2: FastAPI-style bodies). */
export function errorHandler(log: Logger) {
  return function onError(err: Error, c: Context) {
    // Project code chose the status and headers (an HTTPException the auth handler threw).
    if (err instanceof StatusError)
      return c.json({ detail: err.message }, err.status as ContentfulStatusCode, err.headers);
    if (err instanceof HangarError) {
      const detail =
        err.kind === "validation"
          ? (err.issues ?? err.message)
          : err.type
            ? { error: err.type, message: err.message }
            : err.message;
      return c.json({ detail }, statusOf(err.kind));
    }
    if (err instanceof HTTPException) return c.json({ detail: err.message || "HTTP error" }, err.status);
    log.error("unhandled error", { method: c.req.method, path: c.req.path, error: err.stack ?? String(err) });
    return c.json({ detail: "Internal server error" }, 500);
  };
}

export const notFoundHandler = (c: Context) =>
  c.json({ detail: `Not Found: ${c.req.method} ${c.req.path}` }, 404);
