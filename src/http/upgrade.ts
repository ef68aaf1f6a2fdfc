/**
 * WebSocket upgrades go through the app like any request: the HTTP server's `upgrade` listener
 * (`upgradeHandler`) hands the request to it with the raw socket (`UpgradeEnv`), so the middleware
 * (organization, API keys, custom auth) and the route's checks run first; the WebSocket route then
 * upgrades the socket itself (the sandbox data plane's `/execute/ws`, the protocol's
 * `/threads/{id}/stream/events`).
 *
 * Any other answer is a rejection. By default it is written back as a plain HTTP response. On paths
 * that ask for it (`closeOnRejection`) the handshake completes and the socket is closed at once with
 * 4000 + the HTTP status and the answer's message as reason: a browser's WebSocket sees no HTTP status
 * (only a 1006 close, which clients retry), whereas the protocol's clients (SDK 1.15) read 4401, 4403,
 * 4404, 4422 as final.
 */
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { WebSocketServer } from "ws";

/** Set by `upgradeHandler` on the request it hands to the app: the raw socket to upgrade. */
export interface UpgradeEnv {
  upgrade?: { req: IncomingMessage; socket: Duplex; head: Buffer };
}

/** A WebSocket close reason is at most 123 bytes. */
function closeReason(text: string): string {
  let reason = text;
  try {
    const body = JSON.parse(text) as { detail?: unknown; message?: unknown };
    reason = String(body.detail ?? body.message ?? text);
  } catch {}
  while (Buffer.byteLength(reason) > 123) reason = reason.slice(0, -1);
  return reason;
}

export function upgradeHandler(
  fetch: (request: Request, env: UpgradeEnv) => Response | Promise<Response>,
  /** Whether a browser page at this `Origin` may open it (src/http/ws-origin.ts). */
  originAllowed: (origin: string | undefined, host: string | undefined) => boolean = () => true,
  /** Paths whose 4xx rejections are close codes (4000 + status) after the handshake, not HTTP answers. */
  closeOnRejection: (path: string) => boolean = () => false,
  /** The subprotocol such a handshake answers (a browser fails a handshake that answers none it offered). */
  handleProtocols?: (offered: Set<string>) => string | false,
) {
  let closer: Promise<WebSocketServer> | undefined;
  /** Completes the handshake only to close with `4000 + status`; reads no frame. */
  const closeWith = async (
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    status: number,
    text: string,
  ) => {
    closer ??= import("ws").then(
      ({ WebSocketServer }) => new WebSocketServer({ noServer: true, maxPayload: 1024, handleProtocols }),
    );
    (await closer).handleUpgrade(req, socket, head, (ws) => ws.close(4000 + status, closeReason(text)));
  };
  return async (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    // Node leaves an upgraded socket with no 'error' listener, and auth below awaits: a client that
    // resets meanwhile would otherwise crash the process (ECONNRESET/EPIPE as an unhandled 'error').
    socket.on("error", () => socket.destroy());
    const path = (req.url ?? "/").split("?")[0]!;
    const closes = req.method === "GET" && closeOnRejection(path);
    if (!originAllowed(req.headers.origin, req.headers.host)) {
      const detail = `WebSocket from origin '${req.headers.origin}' refused: the CORS policy (langgraph.json http.cors) does not allow it`;
      if (closes) return closeWith(req, socket, head, 403, detail);
      const body = JSON.stringify({ detail });
      socket.end(
        "HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\n" +
          `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
      return;
    }
    // Only a GET is upgraded (RFC 6455): any other method would reach the app as a GET of its path.
    if (req.method !== "GET") {
      const body = JSON.stringify({ detail: `Only GET requests can be upgraded, got ${req.method}` });
      socket.end(
        "HTTP/1.1 405 Method Not Allowed\r\nallow: GET\r\ncontent-type: application/json\r\n" +
          `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
      return;
    }
    const host = req.headers.host ?? "localhost";
    const headers = new Headers();
    for (const [key, value] of Object.entries(req.headers)) {
      if (typeof value === "string") headers.set(key, value);
      else if (Array.isArray(value)) for (const v of value) headers.append(key, v);
    }
    try {
      const response = await fetch(new Request(`http://${host}${req.url ?? "/"}`, { headers }), {
        upgrade: { req, socket, head },
      });
      if (response.headers.get("x-hangar-upgraded") === "1") return;
      const text = await response.text();
      if (closes && response.status >= 400 && response.status < 500) {
        return closeWith(req, socket, head, response.status, text);
      }
      socket.end(
        `HTTP/1.1 ${response.status} ${response.statusText || "Error"}\r\n` +
          `content-type: ${response.headers.get("content-type") ?? "text/plain"}\r\n` +
          `content-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
      );
    } catch {
      socket.destroy();
    }
  };
}
