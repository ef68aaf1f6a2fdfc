/**
 * WebSocket upgrades are not subject to CORS: a browser opens one to any server from any page, sending
 * the page's `Origin`. So an upgrade (the sandbox data plane's `/execute/ws`, the console's terminal)
 * whose `Origin` the CORS policy would not let read a response is refused (403) before it opens:
 *
 * - no `Origin` (a client that is not a browser), or the server's own origin (the console): allowed;
 * - langgraph.json `http.cors`: its `allow_origins` (`*`: any) and `allow_origin_regex`;
 * - no `http.cors`: loopback origins only (`localhost`, `127.0.0.0/8`, `[::1]`, any port) — where
 *   `hangar dev` and Studio run — so that a web page elsewhere cannot drive a keyless dev server.
 */
import type { CorsConfig } from "../config/index.js";

const LOOPBACK_HOSTS = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/** Whether a browser page at `origin` may open a WebSocket on the server reached as `host`. */
export function webSocketOriginAllowed(cors: CorsConfig | undefined) {
  const regex = cors?.allow_origin_regex ? new RegExp(cors.allow_origin_regex) : null;
  return (origin: string | undefined, host: string | undefined): boolean => {
    if (!origin) return true;
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false; // `null` (a sandboxed frame, a file) or garbage
    }
    if (host && url.host.toLowerCase() === host.toLowerCase()) return true;
    if (!cors) return LOOPBACK_HOSTS.test(url.hostname);
    const origins = cors.allow_origins ?? [];
    return origins.includes("*") || origins.includes(origin) || !!regex?.test(origin);
  };
}
