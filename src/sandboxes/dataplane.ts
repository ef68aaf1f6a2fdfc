/**
 * The data plane of a sandbox, at its `dataplane_url` (`/v2/sandboxes/dataplane/{id}`), behind the
 * same API-key auth as the rest of the API (a sandbox of another organization is not found):
 *
 * - `POST /execute` `{command, timeout, shell, env, cwd}` → `{stdout, stderr, exit_code}`; a command
 *   past its timeout is killed and answered 408 `CommandTimeout`; one whose output passes
 *   MAX_EXECUTE_OUTPUT_BYTES, or finds the server's output budget spent, is stopped and answered with what
 *   fit, `truncated: true`; a client that disconnects stops its command.
 * - `GET /execute/ws`: the WebSocket protocol of reference/sandbox.md 3.5 (`exec-socket.ts`).
 * - `POST /upload?path=` (multipart, part `file`) → `{path, written}`; `GET /download?path=` → bytes,
 *   both streamed (`files.ts`).
 */
import type { ServerResponse } from "node:http";
import { StringDecoder } from "node:string_decoder";
import { type Context, Hono } from "hono";
import type { WebSocketServer } from "ws";
import { webSocketProtocol } from "../console/routes.js";
import { HangarError, timedOut, validationFailed } from "../errors.js";
import { type AppEnv, orgOf } from "../http/context.js";
import type { UpgradeEnv } from "../http/upgrade.js";
import { body, params, query } from "../http/validation.js";
import type { BoxService } from "./boxes.js";
import type { CommandEvent, StreamName } from "./commands.js";
import { handleExecSocket } from "./exec-socket.js";
import { download, upload } from "./files.js";
import * as S from "./schemas.js";

const HOME = "/root";
/**
 * The most of each of stdout and stderr `POST /execute` answers with. A command that writes more is
 * stopped (its answer could not hold the rest, and reading on would only burn the server's CPU or, held,
 * leave it blocked until its timeout); the answer says so (see `truncatedNotice`).
 */
export const MAX_EXECUTE_OUTPUT_BYTES = 8 * 2 ** 20;

/** The sandbox area's 422s have string `loc` entries (as routes.ts does for the control plane). */
function stringLocs(err: unknown): unknown {
  if (err instanceof HangarError && err.kind === "validation" && err.issues) {
    return validationFailed(err.issues.map((i) => ({ ...i, loc: i.loc.map(String) })));
  }
  return err;
}

/** One stream's text up to MAX_EXECUTE_OUTPUT_BYTES (cut at a whole UTF-8 character). */
class CappedText {
  readonly #parts: string[] = [];
  #bytes = 0;
  truncated = false;

  /** False once the text passed the cap (what fits was kept). */
  add(data: string): boolean {
    if (this.truncated) return false;
    const size = Buffer.byteLength(data);
    if (this.#bytes + size <= MAX_EXECUTE_OUTPUT_BYTES) {
      this.#parts.push(data);
      this.#bytes += size;
      return true;
    }
    const room = MAX_EXECUTE_OUTPUT_BYTES - this.#bytes;
    this.#parts.push(new StringDecoder("utf8").write(Buffer.from(data).subarray(0, room)));
    this.#bytes = MAX_EXECUTE_OUTPUT_BYTES;
    this.truncated = true;
    return false;
  }

  /** The text as JSON string content (without the quotes), a part at a time: never all escaped at once. */
  *escaped(): Generator<string> {
    for (const part of this.#parts) yield JSON.stringify(part).slice(1, -1);
  }

  /** Drops the text (its command's client has gone). */
  clear(): void {
    this.#parts.length = 0;
  }
}

/**
 * The output all `POST /execute` calls of this server together hold at once, up to `limit`
 * (HANGAR_SANDBOX_EXECUTE_OUTPUT_BUDGET_MB): charged as it arrives, given back once the answer is sent
 * or its client has gone. A command whose output finds it spent is stopped and answered like one past
 * MAX_EXECUTE_OUTPUT_BYTES, saying why.
 */
class HeldOutput {
  #held = 0;
  constructor(readonly limit: number) {}

  /** Charges `bytes`; false (nothing charged) when that would pass the budget. */
  take(bytes: number): boolean {
    if (this.#held + bytes > this.limit) return false;
    this.#held += bytes;
    return true;
  }

  give(bytes: number): void {
    this.#held -= bytes;
  }
}

/**
 * `/execute`'s JSON answer, streamed: each part of the output is escaped only as it is written out, so
 * the answer holds the raw output and one escaped part (escaping can make control bytes 6 times larger).
 * `done` runs once it was sent or its client went away.
 */
function streamedJson(
  output: { stdout: CappedText; stderr: CappedText },
  rest: { stderrNotice: string; exit_code: number | null; truncated: boolean },
  done: () => void,
): Response {
  function* pieces(): Generator<string> {
    yield '{"stdout":"';
    yield* output.stdout.escaped();
    yield '","stderr":"';
    yield* output.stderr.escaped();
    yield `${JSON.stringify(rest.stderrNotice).slice(1, -1)}","exit_code":${JSON.stringify(rest.exit_code)}`;
    yield rest.truncated ? ',"truncated":true}' : "}";
  }
  const it = pieces();
  const encoder = new TextEncoder();
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    done();
  };
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = it.next();
      if (next.done) {
        controller.close();
        return finish();
      }
      controller.enqueue(encoder.encode(next.value));
    },
    cancel: finish,
  });
  return new Response(body, { status: 200, headers: { "content-type": "application/json" } });
}

const truncatedNotice = (stream: StreamName) =>
  `\n[hangar] ${stream} passed the ${MAX_EXECUTE_OUTPUT_BYTES / 2 ** 20} MiB that POST /execute returns ` +
  "per stream, so the command was stopped; /execute/ws streams output of any size.\n";
const budgetNotice = (limit: number) =>
  `\n[hangar] the server holds at most ${limit / 2 ** 20} MiB of output for all POST /execute calls at ` +
  "once (HANGAR_SANDBOX_EXECUTE_OUTPUT_BUDGET_MB) and that was reached, so the command was stopped; " +
  "/execute/ws streams output of any size.\n";

function filePath(c: Parameters<typeof query>[0]): { path: string } {
  try {
    return query(c, S.FilePathQuery);
  } catch (err) {
    throw stringLocs(err);
  }
}

export function dataplaneRoutes(
  service: BoxService,
  limits: {
    maxBodyBytes: number;
    maxUploadBytes: number;
    executeOutputBudgetBytes: number;
    fileIdleTimeoutSeconds: number;
  },
): Hono<AppEnv> {
  // `ws` is imported at the first WebSocket: a server whose sandboxes nobody opens a socket to never loads it.
  let wss: Promise<WebSocketServer> | undefined;
  const webSockets = () => {
    // A frame is a request: no larger than a request body may be.
    wss ??= import("ws").then(
      ({ WebSocketServer }) =>
        new WebSocketServer({
          noServer: true,
          maxPayload: limits.maxBodyBytes,
          handleProtocols: webSocketProtocol,
        }),
    );
    return wss;
  };
  const sandboxOf = (c: Context<AppEnv>) => service.running(orgOf(c), params(c, S.SandboxIdPath).id);
  const held = new HeldOutput(limits.executeOutputBudgetBytes);

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
      const output = { stdout: new CappedText(), stderr: new CappedText() };
      let charged = 0;
      const giveBack = () => {
        held.give(charged);
        charged = 0;
      };
      let cut: { stream: StreamName; notice: string } | null = null;
      const stop = (stream: StreamName, notice: string) => {
        cut = { stream, notice };
        run.kill();
      };
      // A client that went away: the command is stopped and its output dropped (no one will read it).
      const signal = c.req.raw.signal;
      const gone = () => {
        run.kill();
        output.stdout.clear();
        output.stderr.clear();
        giveBack();
      };
      signal.addEventListener("abort", gone, { once: true });
      run.attach((event: CommandEvent) => {
        if (event.type !== "stdout" && event.type !== "stderr") return;
        if (cut || signal.aborted) return;
        const size = Buffer.byteLength(event.data);
        if (!held.take(size)) return stop(event.type, budgetNotice(held.limit));
        charged += size;
        if (!output[event.type].add(event.data)) stop(event.type, truncatedNotice(event.type));
      });
      try {
        await run.done;
        if (signal.aborted) return new Response(null, { status: 499 }); // nobody reads it
        if (run.timedOut && !cut) {
          throw timedOut(`Command timed out after ${req.timeout} seconds and was killed`, "CommandTimeout");
        }
      } catch (err) {
        giveBack();
        throw err;
      } finally {
        signal.removeEventListener("abort", gone);
      }
      const notice = (cut as { notice: string } | null)?.notice ?? "";
      return streamedJson(
        output,
        { stderrNotice: notice, exit_code: run.exitCode, truncated: cut !== null },
        giveBack,
      );
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
      return c.json(
        await upload(service, box, path, c.req.raw, {
          maxBytes: limits.maxUploadBytes,
          idleSeconds: limits.fileIdleTimeoutSeconds,
        }),
      );
    })
    .get("/dataplane/:id/download", async (c) => {
      const box = await sandboxOf(c);
      // Served by @hono/node-server, the response's connection is `outgoing`'s (HttpBindings).
      const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
      const file = await download(service, box, filePath(c).path, limits.fileIdleTimeoutSeconds, () =>
        outgoing?.destroy(),
      );
      if (c.req.method !== "HEAD") return file;
      await file.body?.cancel(); // the checks' answer without the bytes: the command is stopped
      return new Response(null, { status: file.status, headers: file.headers });
    });
}
