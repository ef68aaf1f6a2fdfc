/**
 * Who the console talks to the API as: the credentials the user typed (an API key, and for custom
 * auth an Authorization header), kept in this tab's sessionStorage only, and the SDK client built
 * from them. The API is this server's own: the page's directory (so `http.mount_prefix` works).
 */
import { Client } from "@langchain/langgraph-sdk/client";

export interface Credentials {
  apiKey?: string;
  authorization?: string;
}

const STORAGE_KEY = "hangar.console.credentials";

export function loadCredentials(): Credentials | null {
  try {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    return raw ? (JSON.parse(raw) as Credentials) : null;
  } catch {
    return null;
  }
}

export function saveCredentials(creds: Credentials | null): void {
  if (creds) sessionStorage.setItem(STORAGE_KEY, JSON.stringify(creds));
  else sessionStorage.removeItem(STORAGE_KEY);
}

/** `http://host:port` + the mount prefix, without a trailing slash (the page is `<api>/console`). */
export const API_URL = new URL(".", document.baseURI).href.replace(/\/$/, "");

export function headersOf(creds: Credentials): Record<string, string> {
  const headers: Record<string, string> = {};
  if (creds.apiKey) headers["x-api-key"] = creds.apiKey;
  if (creds.authorization) headers.authorization = creds.authorization;
  return headers;
}

/**
 * Called when the server answers 401 to a signed-in console: the key was revoked, the token expired,
 * or a server that needed none now does. 403 (a handler refusing one action) is not this.
 */
export type OnRefused = () => void;

/** `fetch`, telling `onRefused` of a 401 (the caller still gets the response, and fails as usual). */
function watchedFetch(onRefused?: OnRefused): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    if (res.status === 401) onRefused?.();
    return res;
  };
}

export function clientFor(creds: Credentials, onRefused?: OnRefused): Client {
  return new Client({
    apiUrl: API_URL,
    // null: never fall back to an API key from the environment.
    apiKey: creds.apiKey || null,
    defaultHeaders: creds.authorization ? { authorization: creds.authorization } : {},
    callerOptions: { maxRetries: 1, fetch: watchedFetch(onRefused) },
  });
}

/** An API error with the server's status and its `detail`, as text. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** `detail` of an error body as one line: a string, a typed error, or a 422's list of problems. */
export function describeDetail(body: unknown, fallback: string): string {
  const detail = (body as { detail?: unknown } | null)?.detail;
  if (typeof detail === "string") return detail;
  if (Array.isArray(detail))
    return detail.map((d) => `${(d.loc ?? []).join(".")}: ${d.msg ?? JSON.stringify(d)}`).join("; ");
  if (detail && typeof detail === "object") {
    const typed = detail as { error?: string; message?: string };
    if (typed.message) return typed.error ? `${typed.error}: ${typed.message}` : typed.message;
  }
  return fallback;
}

/** A request to a route the SDK has no method for (sandboxes, metrics, cron updates). */
export async function request<T = any>(
  creds: Credentials,
  method: string,
  path: string,
  body?: unknown,
  onRefused?: OnRefused,
): Promise<T> {
  const init: RequestInit = { method, headers: headersOf(creds) };
  if (body instanceof FormData) init.body = body;
  else if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)["content-type"] = "application/json";
  }
  const res = await watchedFetch(onRefused)(`${API_URL}${path}`, init);
  if (!res.ok) {
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(text);
    } catch {}
    throw new ApiError(res.status, `${res.status}: ${describeDetail(parsed, text || res.statusText)}`);
  }
  if (res.status === 204) return undefined as T;
  const type = res.headers.get("content-type") ?? "";
  return (type.includes("json") ? res.json() : res.blob()) as Promise<T>;
}
