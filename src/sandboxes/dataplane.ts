/**
 * The data plane of a sandbox, at its `dataplane_url` (`/v2/sandboxes/dataplane/{id}`), behind the
 * same API-key auth as the rest of the API (a sandbox of another organization is not found):
 *
 * - `POST /execute` `{command, timeout, shell, env, cwd}` → `{stdout, stderr, exit_code}`; a command
 *   past its timeout is killed and answered 408 `CommandTimeout`.
 * - `GET /execute/ws`: the WebSocket protocol of reference/sandbox.md 3.5 (`exec-socket.ts`).
 * - `POST /upload?path=` (multipart, part `file`) → `{path, written}`; `GET /download?path=` → bytes.
 *   Files are read and written by a command inside the sandbox (`cat`), so paths resolve exactly as the
 *   sandbox sees them (its mounts, its symlinks) and never on the host.
 */
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { type Context, Hono } from "hono";
import type { WebSocketServer } from "ws";
import { webSocketProtocol } from "../console/routes.js";
import { badRequest, HangarError, notFound, timedOut, validationFailed } from "../errors.js";
import { type AppEnv, orgOf } from "../http/context.js";
import { body, params, query } from "../http/validation.js";
import type { BoxRecord } from "../storage/ports.js";
import type { BoxService } from "./boxes.js";
import type { CommandEvent } from "./commands.js";
import { handleExecSocket } from "./exec-socket.js";
import * as S from "./schemas.js";

/** Set by `upgradeHandler` on the request it hands to the app: the raw socket to upgrade. */
export interface UpgradeEnv {
  upgrade?: { req: IncomingMessage; socket: Duplex; head: Buffer };
}

const HOME = "/root";
/** Files move through a command; these bound how long one may take. */
const FILE_TIMEOUT_SECONDS = 300;
const MAX_UPLOAD_BYTES = 512 * 2 ** 20;

/** A path as one single-quoted shell word. */
const shellQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** The sandbox area's 422s have string `loc` entries (as routes.ts does for the control plane). */
function stringLocs(err: unknown): unknown {
  if (err instanceof HangarError && err.kind === "validation" && err.issues) {
    return validationFailed(err.issues.map((i) => ({ ...i, loc: i.loc.map(String) })));
  }
  return err;
}

/** Runs a command to its end and collects its raw output (file transfers). */
async function collect(
  service: BoxService,
  box: BoxRecord,
  command: string,
  input?: Uint8Array,
): Promise<{ stdout: Buffer; stderr: string; exitCode: number }> {
  const proc = service.spawn(box, { shell: "/bin/sh", command, env: {}, cwd: "/" });
  const timer = setTimeout(() => proc.kill(), FILE_TIMEOUT_SECONDS * 1000);
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  const ended = (stream: NodeJS.ReadableStream, into: Buffer[]) =>
    new Promise<void>((resolve) => {
      stream.on("data", (chunk: Buffer) => into.push(chunk));
      stream.once("end", resolve);
      stream.once("error", () => resolve());
    });
  const drained = Promise.all([ended(proc.stdout, stdout), ended(proc.stderr, stderr)]);
  proc.stdin.end(input ?? new Uint8Array());
  const exitCode = await proc.exited;
  clearTimeout(timer);
  await drained;
  return { stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr).toString("utf8"), exitCode };
}

function filePath(c: Parameters<typeof query>[0]): { path: string } {
  try {
    return query(c, S.FilePathQuery);
  } catch (err) {
    throw stringLocs(err);
  }
}

export function dataplaneRoutes(service: BoxService): Hono<AppEnv> {
  // `ws` is imported at the first WebSocket: a server whose sandboxes nobody opens a socket to never loads it.
  let wss: Promise<WebSocketServer> | undefined;
  const webSockets = () => {
    wss ??= import("ws").then(
      ({ WebSocketServer }) => new WebSocketServer({ noServer: true, handleProtocols: webSocketProtocol }),
    );
    return wss;
  };
  const sandboxOf = (c: Context<AppEnv>) => service.running(orgOf(c), params(c, S.SandboxIdPath).id);

  return new Hono<AppEnv>()
    .post("/dataplane/:id/execute", async (c) => {
      const box = await sandboxOf(c);
      const req = await body(c, S.ExecuteBody).catch((err) => {
        throw stringLocs(err);
      });
      const run = service.exec(
        box,
        { shell: req.shell, command: req.command, env: req.env ?? {}, cwd: req.cwd ?? HOME },
        { timeoutSeconds: req.timeout, idleTimeoutSeconds: 0, killOnDisconnect: false, keepSeconds: 0 },
      );
      let stdout = "";
      let stderr = "";
      run.attach((event: CommandEvent) => {
        if (event.type === "stdout") stdout += event.data;
        else if (event.type === "stderr") stderr += event.data;
      });
      await run.done;
      if (run.timedOut) {
        throw timedOut(`Command timed out after ${req.timeout} seconds and was killed`, "CommandTimeout");
      }
      return c.json({ stdout, stderr, exit_code: run.exitCode });
    })
    .get("/dataplane/:id/execute/ws", async (c) => {
      const box = await sandboxOf(c);
      const upgrade = (c.env as UpgradeEnv | undefined)?.upgrade;
      if (!upgrade) {
        return c.json({ detail: "This endpoint is a WebSocket: send an Upgrade: websocket request" }, 426);
      }
      (await webSockets()).handleUpgrade(upgrade.req, upgrade.socket, upgrade.head, (ws) =>
        handleExecSocket(ws, service, box),
      );
      return c.body(null, 200, { "x-hangar-upgraded": "1" });
    })
    .post("/dataplane/:id/upload", async (c) => {
      const box = await sandboxOf(c);
      const { path } = filePath(c);
      const form = await c.req.parseBody().catch(() => {
        throw badRequest("The body must be multipart/form-data with a part named 'file'", "WriteError");
      });
      const file = form.file;
      if (!(file instanceof File)) {
        throw badRequest("The body must be multipart/form-data with a part named 'file'", "WriteError");
      }
      if (file.size > MAX_UPLOAD_BYTES)
        throw badRequest(`File larger than ${MAX_UPLOAD_BYTES} bytes`, "WriteError");
      const bytes = new Uint8Array(await file.arrayBuffer());
      const p = shellQuote(path);
      const result = await collect(
        service,
        box,
        `d=${p}; d=\${d%/*}; if [ -n "$d" ]; then mkdir -p -- "$d" || exit 1; fi; cat > ${p}`,
        bytes,
      );
      if (result.exitCode !== 0) {
        throw badRequest(
          `Could not write ${path}: ${result.stderr.trim() || `exit ${result.exitCode}`}`,
          "WriteError",
        );
      }
      return c.json({ path, written: bytes.length });
    })
    .get("/dataplane/:id/download", async (c) => {
      const box = await sandboxOf(c);
      const { path } = filePath(c);
      const p = shellQuote(path);
      const result = await collect(
        service,
        box,
        `[ -e ${p} ] || exit 44; [ -d ${p} ] && exit 45; exec cat -- ${p}`,
      );
      if (result.exitCode === 44) throw notFound(`File '${path}' not found`, "FileNotFound");
      if (result.exitCode === 45) throw badRequest(`'${path}' is a directory`, "ReadError");
      if (result.exitCode !== 0) {
        throw badRequest(
          `Could not read ${path}: ${result.stderr.trim() || `exit ${result.exitCode}`}`,
          "ReadError",
        );
      }
      return c.body(new Uint8Array(result.stdout), 200, { "content-type": "application/octet-stream" });
    });
}

/**
 * The HTTP server's `upgrade` listener: hands the upgrade request to the app (so auth, the route and
 * its checks run as for any request); the WebSocket route upgrades the socket itself, and any other
 * answer (401, 404, 400 NotReady) is written back as a plain HTTP response.
 */
export function upgradeHandler(fetch: (request: Request, env: UpgradeEnv) => Response | Promise<Response>) {
  return async (req: IncomingMessage, socket: Duplex, head: Buffer) => {
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
