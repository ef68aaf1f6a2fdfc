/**
 * Domain errors. Storage, runtime and route code throw these; `http/errors.ts` is the only place that
 * turns them into HTTP responses (DESIGN.md decision 2), so no layer below HTTP knows status codes.
 */
export type ErrorKind =
  | "not_found" // 404
  | "conflict" // 409
  | "bad_request" // 400: well-formed request the current state cannot accept
  | "unauthorized" // 401: no valid API key, or the auth handler refused the request
  | "forbidden" // 403: an authorization handler refused the action
  | "validation" // 422: the request does not match its schema
  | "quota" // 429
  | "timeout" // 408: a wait or a command ran out of time
  | "too_large" // 413: a body (an upload) past its limit, refused as it arrived
  | "unavailable" // 503: a sandbox could not be provisioned
  | "gateway_timeout"; // 504: a pool did not become ready in time

export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export class HangarError extends Error {
  override name = "HangarError";
  constructor(
    readonly kind: ErrorKind,
    message: string,
    /** When set, the body is `{detail: {error: type, message}}` (the sandbox area's typed errors). */
    readonly type?: string,
    readonly issues?: ValidationIssue[],
  ) {
    super(message);
  }
}

export const notFound = (message: string, type?: string) => new HangarError("not_found", message, type);
export const isNotFound = (error: unknown) => error instanceof HangarError && error.kind === "not_found";
export const conflict = (message: string, type?: string) => new HangarError("conflict", message, type);
export const unauthorized = (message: string) => new HangarError("unauthorized", message);
export const forbidden = (message: string) => new HangarError("forbidden", message);
export const timedOut = (message: string, type?: string) => new HangarError("timeout", message, type);
export const unavailable = (message: string, type?: string) => new HangarError("unavailable", message, type);
export const tooLarge = (message: string, type?: string) => new HangarError("too_large", message, type);
export const badRequest = (message: string, type?: string) => new HangarError("bad_request", message, type);
export const validationFailed = (issues: ValidationIssue[]) =>
  new HangarError(
    "validation",
    issues.map((i) => `${i.loc.join(".")}: ${i.msg}`).join("; "),
    undefined,
    issues,
  );

/**
 * An error whose status and headers project code chose (an `HTTPException` the project's auth handler
 * threw): answered as they are, with its message as the detail.
 */
export class StatusError extends HangarError {
  constructor(
    kind: ErrorKind,
    readonly status: number,
    message: string,
    readonly headers: Record<string, string>,
  ) {
    super(kind, message);
  }
}
