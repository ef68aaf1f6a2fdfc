/**
 * One `/execute/ws` connection (reference/sandbox.md 3.5). The first text frame is either
 * `{"type":"execute", ...}` (answered by `started`, then `stdout`/`stderr` frames with byte offsets,
 * then `exit` and a close with 1000) or `{"type":"reconnect", command_id, stdout_offset, stderr_offset}`
 * (the same without `started`). Later frames: `{"type":"kill"}` and `{"type":"input","data"}`.
 * Failures are `{"type":"error","error_type","error"}` frames: `CommandTimeout`, `CommandNotFound`,
 * `SessionExpired` (the output asked for is no longer kept), `InvalidRequest`.
 *
 * A disconnect does not stop the command (unless `kill_on_disconnect`); it is killed when no client
 * has been attached for `idle_timeout_seconds`, and it stays reconnectable for `ttl_seconds` after it ends.
 *
 * Flow control both ways, so a client holds no more of the server's memory by not reading or by
 * sending faster than the command reads: while more than SOCKET_HIGH_WATER bytes wait to go out on the
 * socket, the command's output is held (its pipes are not read, so it blocks writing, as on a
 * terminal); while its stdin has a backlog, the socket's frames are not read (TCP pushes back).
 */
import type { WebSocket } from "ws";
import type { BoxRecord } from "../storage/ports.js";
import type { BoxService } from "./boxes.js";
import type { CommandEvent, CommandRun } from "./commands.js";
import * as S from "./schemas.js";

const HOME = "/root";
/** Bytes a socket may have waiting to go out before the command's output is held; read again below half. */
export const SOCKET_HIGH_WATER = 2 ** 20;

export function handleExecSocket(ws: WebSocket, service: BoxService, box: BoxRecord): void {
  let run: CommandRun | null = null;
  let detach: (() => void) | null = null;

  let holding = false;
  const send = (frame: object) => {
    if (ws.readyState !== ws.OPEN) return;
    // Called once the frame is written out: the last one held back sees the socket drained.
    ws.send(JSON.stringify(frame), () => {
      if (holding && ws.bufferedAmount < SOCKET_HIGH_WATER / 2) {
        holding = false;
        run?.release(forward);
      }
    });
    if (!holding && run && ws.bufferedAmount > SOCKET_HIGH_WATER) {
      holding = true;
      run.hold(forward);
    }
  };
  const fail = (error_type: string, error: string) => {
    send({ type: "error", error_type, error });
    ws.close(1000);
  };
  const forward = (event: CommandEvent) => {
    send(event);
    if (event.type !== "stdout" && event.type !== "stderr") ws.close(1000);
  };

  ws.on("message", (raw, isBinary) => {
    let frame: any;
    try {
      frame = JSON.parse(isBinary ? Buffer.from(raw as Buffer).toString("utf8") : raw.toString());
    } catch {
      return fail("InvalidRequest", "Frames must be JSON text");
    }
    if (run) {
      if (frame?.type === "kill") run.kill();
      else if (frame?.type === "input" && typeof frame.data === "string" && !run.write(frame.data)) {
        ws.pause();
        run.whenWritable(() => ws.resume());
      }
      return;
    }
    if (frame?.type === "execute") {
      const parsed = S.WsExecute.safeParse(frame);
      if (!parsed.success)
        return fail("InvalidRequest", parsed.error.issues.map((i) => i.message).join("; "));
      const req = parsed.data;
      if (req.command_id && service.commands.get(box.id, req.command_id)) {
        return fail("InvalidRequest", `Command '${req.command_id}' already exists`);
      }
      try {
        run = service.exec(
          box,
          { shell: req.shell, command: req.command, env: req.env ?? {}, cwd: req.cwd ?? HOME },
          {
            timeoutSeconds: req.timeout_seconds,
            idleTimeoutSeconds: req.idle_timeout_seconds,
            killOnDisconnect: req.kill_on_disconnect,
            keepSeconds: req.ttl_seconds,
          },
          req.command_id ?? undefined,
        );
      } catch (err) {
        return fail((err as { type?: string }).type ?? "CommandError", (err as Error).message);
      }
      send({ type: "started", command_id: run.id, pid: null });
      detach = run.attach(forward);
      return;
    }
    if (frame?.type === "reconnect") {
      const parsed = S.WsReconnect.safeParse(frame);
      if (!parsed.success)
        return fail("InvalidRequest", parsed.error.issues.map((i) => i.message).join("; "));
      const found = service.commands.get(box.id, parsed.data.command_id);
      if (!found) return fail("CommandNotFound", `Command '${parsed.data.command_id}' not found`);
      run = found;
      detach = found.attach(forward, {
        stdout: parsed.data.stdout_offset,
        stderr: parsed.data.stderr_offset,
      });
      if (!detach) return fail("SessionExpired", "The output from these offsets is no longer kept");
      return;
    }
    fail("InvalidRequest", "The first frame must be {type: 'execute'} or {type: 'reconnect'}");
  });
  ws.on("close", () => detach?.());
  ws.on("error", () => detach?.());
}
