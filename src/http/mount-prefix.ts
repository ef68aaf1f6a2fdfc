/**
 * langgraph.json `http.mount_prefix`: the whole server under one path (`/my-api/threads/…`); other
 * paths are 404. The listener takes the prefix off before the app sees a request, so routes (and the
 * project's `http.app`) are written without it; clients put it in their base URL, and the SDK
 * prepends that to every path, `Content-Location` included. What the server hands out as an absolute
 * URL (a sandbox's data plane, UI files, A2A cards) asks `mountPrefixOf` for the prefix the request
 * came through. Requests the server sends itself (webhooks to a path) go to the app directly.
 */
import type { Context } from "hono";

/** Where the listener records the prefix it took off, in the request's environment. */
const MOUNT_PREFIX = Symbol("hangar.mountPrefix");

type Fetch = (request: Request, env?: unknown) => Response | Promise<Response>;

export function underPrefix(prefix: string, fetch: Fetch): Fetch {
  return (request, env) => {
    const url = new URL(request.url);
    if (url.pathname !== prefix && !url.pathname.startsWith(`${prefix}/`)) {
      return Response.json({ detail: `Not found: this server is mounted under ${prefix}` }, { status: 404 });
    }
    url.pathname = url.pathname.slice(prefix.length) || "/";
    const init: RequestInit & { duplex?: "half" } = {
      method: request.method,
      headers: request.headers,
      signal: request.signal,
    };
    if (request.body) {
      init.body = request.body;
      init.duplex = "half";
    }
    return fetch(new Request(url, init), { ...(env as object), [MOUNT_PREFIX]: prefix });
  };
}

/** The path prefix this request was served under (`""` when none). */
export function mountPrefixOf(c: Context<any>): string {
  return (c.env as Record<symbol, string> | undefined)?.[MOUNT_PREFIX] ?? "";
}
