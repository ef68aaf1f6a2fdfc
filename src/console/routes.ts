/**
 * The console (`/console`): a single-page app over this server's own API, served with every asset
 * from here (no CDN: deployments may have no internet).
 *
 * - `GET /console` → the page (HTML naming the bundle's hashed files; revalidated on every load);
 * - `GET /console/` → a redirect to `/console` (the page's relative URLs assume no trailing slash);
 * - `GET /console/assets/{file}` → a file of the bundle (`bundle.ts`), cached for good (names are hashes).
 *
 * All are public, like `/docs`: a page load cannot send an API key. The app asks for the key and sends
 * it with every API request, as any client does; it sees exactly what the API shows that key.
 * URLs are relative, so the console works behind `http.mount_prefix` too.
 *
 * The browser cannot set headers on a WebSocket, so the sandbox terminal sends its credentials as
 * WebSocket subprotocols (`consoleWebSocketCredentials`), the way Kubernetes' API server takes a
 * bearer token from a browser.
 */
import { gzip } from "node:zlib";
import { Hono, type MiddlewareHandler } from "hono";
import { z } from "zod";
import { badRequest, notFound } from "../errors.js";
import type { AppEnv } from "../http/context.js";
import type { ApiDocs } from "../http/openapi.js";
import { params } from "../http/validation.js";
import { type ConsoleAsset, type ConsoleBundle, consoleBundle } from "./bundle.js";

/** Only this server's own files; React Flow and xterm.js set inline styles. ws: for the terminal. */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
  "connect-src 'self' ws: wss:; font-src 'self' data:; base-uri 'self'; form-action 'self'; frame-ancestors 'self'";

const AssetPath = z.object({ file: z.string().describe("A file of the console's bundle.") });

const escapeAttr = (value: string) => value.replace(/[&<>"]/g, (ch) => `&#${ch.charCodeAt(0)};`);

function page(bundle: ConsoleBundle): string {
  const asset = (file: string) => escapeAttr(`console/assets/${encodeURIComponent(file)}`);
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Hangar console</title>
    <link rel="icon" href="data:,">
${bundle.styles.map((f) => `    <link rel="stylesheet" href="${asset(f)}">`).join("\n")}
    <script type="module" src="${asset(bundle.script)}"></script>
  </head>
  <body>
    <noscript>The Hangar console needs JavaScript. The API reference is at <a href="docs">docs</a>.</noscript>
    <div id="root"></div>
  </body>
</html>
`;
}

/**
 * The console's routes. The bundle is read (or built) at the first request and kept; a failed build
 * is answered as a 500 naming esbuild's errors, and tried again at the next request. Assets are sent
 * gzipped to browsers that take it (compressed once each, when first asked for).
 */
export function consoleRoutes(): Hono<AppEnv> {
  let bundle: Promise<ConsoleBundle> | undefined;
  const bundled = () => {
    if (!bundle) {
      bundle = consoleBundle();
      bundle.catch(() => (bundle = undefined));
    }
    return bundle;
  };
  const gzipped = new WeakMap<ConsoleAsset, Promise<Buffer>>();
  const gzipOf = (asset: ConsoleAsset) => {
    let zipped = gzipped.get(asset);
    if (!zipped) {
      zipped = new Promise((resolve, reject) =>
        gzip(asset.contents, (err, out) => (err ? reject(err) : resolve(out))),
      );
      gzipped.set(asset, zipped);
    }
    return zipped;
  };

  return new Hono<AppEnv>()
    .get("/console", async (c) =>
      c.html(page(await bundled()), 200, {
        "Content-Security-Policy": CSP,
        "Cache-Control": "no-cache",
        "X-Content-Type-Options": "nosniff",
      }),
    )
    .get("/console/", (c) => c.redirect("../console", 301))
    .get("/console/assets/:file", async (c) => {
      const { file } = params(c, AssetPath);
      const asset = (await bundled()).assets.get(file);
      if (!asset) throw notFound(`No such console asset: ${file}`);
      const headers: Record<string, string> = {
        "Content-Type": asset.contentType,
        "Cache-Control": "public, max-age=31536000, immutable",
        "X-Content-Type-Options": "nosniff",
        Vary: "Accept-Encoding",
      };
      if (/\bgzip\b/.test(c.req.header("accept-encoding") ?? "")) {
        const zipped = await gzipOf(asset);
        return c.body(new Uint8Array(zipped), 200, { ...headers, "Content-Encoding": "gzip" });
      }
      return c.body(asset.contents, 200, headers);
    });
}

/** The subprotocol the console's terminal asks for beside its credentials; the server answers it. */
export const CONSOLE_WS_PROTOCOL = "hangar.console";
const KEY_PROTOCOL = "hangar.key.";
const AUTHORIZATION_PROTOCOL = "hangar.authorization.";
const carriesCredential = (protocol: string) =>
  protocol.startsWith(KEY_PROTOCOL) || protocol.startsWith(AUTHORIZATION_PROTOCOL);

/**
 * The subprotocol a WebSocket handshake answers (`ws`'s `handleProtocols`): the first offered that
 * carries no credential, or none. The answer is sent back in `Sec-WebSocket-Protocol`, where proxies
 * and logs see it: a key is never echoed. An upgrade that offers credentials and nothing else is
 * refused before it gets here (`consoleWebSocketCredentials`).
 */
export function webSocketProtocol(offered: Set<string>): string | false {
  for (const protocol of offered) if (!carriesCredential(protocol)) return protocol;
  return false;
}

/**
 * A WebSocket upgrade from the console carries its API key and Authorization header as subprotocols
 * (`hangar.key.<base64url>`, `hangar.authorization.<base64url>`): they become the request's
 * `X-Api-Key` and `Authorization` headers (when it has none), so authentication reads them as for any
 * request. Only for the data plane's `/execute/ws` and the protocol's `/threads/{id}/stream/events`
 * upgrades (a browser's WebSocket cannot send headers, and the SDK refuses them there); a value that is no valid header value is
 * dropped (authentication then refuses the request). Runs before authentication. The handshake must
 * answer a subprotocol the client offered, and never a credential (`webSocketProtocol`): an upgrade
 * that offers credentials and no other subprotocol (`hangar.console`) is a 400 saying so.
 */
export const consoleWebSocketCredentials: MiddlewareHandler<AppEnv> = async (c, next) => {
  const offered = c.req.header("sec-websocket-protocol");
  if (
    offered &&
    c.req.method === "GET" &&
    c.req.header("upgrade")?.toLowerCase() === "websocket" &&
    WEBSOCKET_PATHS.test(c.req.path)
  ) {
    const protocols = offered.split(",").map((p) => p.trim());
    if (protocols.some(carriesCredential) && webSocketProtocol(new Set(protocols)) === false) {
      throw badRequest(
        `A WebSocket that sends credentials as subprotocols must also offer '${CONSOLE_WS_PROTOCOL}', the subprotocol the server answers (a credential is never echoed back)`,
      );
    }
    const headers = c.req.raw.headers;
    for (const protocol of protocols) {
      const [prefix, header] = protocol.startsWith(KEY_PROTOCOL)
        ? [KEY_PROTOCOL, "x-api-key"]
        : protocol.startsWith(AUTHORIZATION_PROTOCOL)
          ? [AUTHORIZATION_PROTOCOL, "authorization"]
          : [];
      if (!prefix || !header || headers.has(header)) continue;
      const value = Buffer.from(protocol.slice(prefix.length), "base64url").toString("utf8");
      if (!HEADER_VALUE.test(value)) continue;
      try {
        headers.set(header, value);
      } catch {} // headers that cannot be changed: the request goes on without them
    }
  }
  return next();
};

/** The WebSockets that take credentials as subprotocols: the data plane's and the protocol's stream. */
const WEBSOCKET_PATHS = /\/execute\/ws$|\/threads\/[^/]+\/stream\/events$/;

/** Visible ASCII and inner spaces: what a key or an Authorization value can be. */
const HEADER_VALUE = /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/;

export const consoleApiDocs: ApiDocs = {
  routes: {
    "GET /console": {
      tag: "System",
      summary: "The console: threads, runs, assistants, sandboxes, crons and store in the browser",
      contentType: "text/html",
      responseDescription: "An HTML page; its scripts and styles are served under `/console/assets/`.",
      public: true,
    },
    "GET /console/": {
      tag: "System",
      summary: "Redirects to /console",
      status: 301,
      responseDescription: "A redirect to `/console`.",
      public: true,
    },
    "GET /console/assets/{file}": {
      tag: "System",
      summary: "A script or style sheet of the console (names are content hashes)",
      params: AssetPath,
      contentType: "application/octet-stream",
      responseDescription: "The asset (JavaScript or CSS).",
      public: true,
    },
  },
};
