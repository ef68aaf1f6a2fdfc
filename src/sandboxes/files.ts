/**
 * File transfers of the data plane (`POST /upload`, `GET /download`), streamed both ways: the server
 * holds a file's bytes only in flight (a few pipe and socket buffers), whatever its size.
 *
 * Files are read and written by a command inside the sandbox (`cat`), so paths resolve exactly as the
 * sandbox sees them (its mounts, its symlinks) and never on the host.
 *
 * - Download: the command checks the path (missing: 404 `FileNotFound`; a directory or anything that
 *   is not a regular file, such as /dev/zero or a FIFO: 400 `ReadError`), opens it, then says so with
 *   its size (Content-Length) on a line before the file's bytes; the answer is 200 from then on and
 *   the file follows at the pace the client reads it (its pipe is read only as the response is
 *   written: backpressure).
 * - Upload: the multipart body is parsed as it arrives (busboy) and part `file` is piped into a command
 *   writing a temporary file beside the target, at the pace the sandbox writes it. Past
 *   `maxBytes` (HANGAR_SANDBOX_MAX_UPLOAD_MB) the upload is refused with 413 as soon as that many bytes arrived. Only a whole
 *   upload is renamed over the target (`mv -T`, keeping the old file's mode), by a second command: a
 *   refused or broken one leaves the old file as it was. A directory target is refused.
 */
import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import busboy from "busboy";
import { badRequest, notFound, tooLarge } from "../errors.js";
import type { BoxRecord } from "../storage/ports.js";
import type { BoxService } from "./boxes.js";

/** What a transfer's command may say on stderr that the error message quotes. */
const MAX_STDERR_BYTES = 4096;
/** What a multipart body may hold besides the file: a few small fields, nothing the server keeps. */
const MULTIPART_LIMITS = { files: 1, fields: 16, fieldSize: 64 * 1024, parts: 32, headerPairs: 64 };

/** A path as one single-quoted shell word. */
export const shellQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

type Transfer = ReturnType<typeof transferCommand>;

/**
 * A command for a transfer: killed (and `onIdle` called) once no byte moved for `idleSeconds`
 * (HANGAR_SANDBOX_FILE_IDLE_TIMEOUT_SECONDS; `moved` resets the clock, so a slow but steady transfer goes
 * on, and a client that stops reading or sending holds it no longer); its stderr kept (bounded) for errors.
 */
function transferCommand(
  service: BoxService,
  box: BoxRecord,
  command: string,
  idleSeconds: number,
  onIdle: () => void = () => {},
) {
  const proc = service.spawn(box, { shell: "/bin/sh", command, env: {}, cwd: "/" });
  let idled = false;
  const timer = setTimeout(() => {
    idled = true;
    proc.kill();
    onIdle();
  }, idleSeconds * 1000);
  let stderr = "";
  proc.stderr.on("data", (chunk: Buffer) => {
    if (stderr.length < MAX_STDERR_BYTES) stderr += chunk.toString("utf8");
  });
  proc.stderr.on("error", () => {});
  proc.stdout.on("error", () => {});
  let ended = false;
  const exited = proc.exited.then((code) => {
    ended = true;
    clearTimeout(timer);
    return code;
  });
  return {
    proc,
    exited,
    stderr: () => stderr.slice(0, MAX_STDERR_BYTES).trim(),
    /** Whether it was killed by the idle timeout. */
    idled: () => idled,
    // Never re-armed once the command ended (refresh would start a cleared timer again).
    moved: () => {
      if (!ended) timer.refresh();
    },
  };
}

/** Runs a short command to its end (nothing on stdin); its exit code and stderr. */
async function run(service: BoxService, box: BoxRecord, command: string, idleSeconds: number) {
  const { proc, exited, stderr } = transferCommand(service, box, command, idleSeconds);
  proc.stdout.resume();
  proc.stdin.end();
  return { code: await exited, stderr: stderr() };
}

/**
 * `breakOff`: ends the response where it is sent (its connection), called when no byte moved for
 * `idleSeconds`; a client that stopped reading is not read from again, so only the connection can end it.
 */
export async function download(
  service: BoxService,
  box: BoxRecord,
  path: string,
  idleSeconds: number,
  breakOff: () => void,
): Promise<Response> {
  const p = shellQuote(path);
  let started = false; // the response is under way: the idle timeout ends its connection
  // Once the file is open, its size (for Content-Length) on a line of its own, then its bytes.
  const { proc, exited, stderr, moved } = transferCommand(
    service,
    box,
    `[ -e ${p} ] || exit 44; [ -d ${p} ] && exit 45; [ -f ${p} ] || exit 46; exec < ${p}; ` +
      `n=$(stat -L -c %s -- ${p}) || exit 1; printf '%s\\n' "$n"; exec cat`,
    idleSeconds,
    () => {
      if (started) breakOff();
    },
  );
  proc.stdin.end();
  const chunks = proc.stdout[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const nextChunk = () => chunks.next().catch(() => ({ done: true as const, value: undefined }));
  let head = Buffer.alloc(0);
  let newline = -1;
  while (newline < 0 && head.length <= 32) {
    const next = await nextChunk();
    if (next.done) {
      const code = await exited;
      if (code === 44) throw notFound(`File '${path}' not found`, "FileNotFound");
      if (code === 45) throw badRequest(`'${path}' is a directory`, "ReadError");
      if (code === 46) throw badRequest(`'${path}' is not a regular file`, "ReadError");
      throw badRequest(`Could not read ${path}: ${stderr() || `exit ${code}`}`, "ReadError");
    }
    head = Buffer.concat([head, next.value]);
    newline = head.indexOf(0x0a);
  }
  const size = Number(head.subarray(0, newline).toString());
  if (newline < 0 || !Number.isSafeInteger(size)) {
    proc.kill();
    throw badRequest(`Could not read ${path}: its size could not be read`, "ReadError");
  }
  let left = size;
  // Exactly `size` bytes go out: a file that grew meanwhile is cut there, one that shrank breaks the
  // response off (a short body must not look like a whole file).
  const send = (controller: ReadableStreamDefaultController<Uint8Array>, chunk: Buffer) => {
    const part = chunk.subarray(0, left);
    left -= part.length;
    if (part.length > 0) controller.enqueue(part);
    if (left === 0) {
      controller.close();
      proc.kill();
    }
  };
  started = true;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      send(controller, head.subarray(newline + 1));
    },
    // Called only as the response is written out: the pipe is read at the client's pace.
    async pull(controller) {
      const next = await nextChunk();
      moved();
      if (!next.done) return send(controller, next.value);
      const code = await exited;
      controller.error(
        new Error(
          `reading ${path} failed after ${size - left} of ${size} bytes: ${stderr() || `exit ${code}`}`,
        ),
      );
    },
    cancel() {
      proc.kill(); // the client went away
    },
  });
  return new Response(body, {
    status: 200,
    headers: { "content-type": "application/octet-stream", "content-length": String(size) },
  });
}

export async function upload(
  service: BoxService,
  box: BoxRecord,
  path: string,
  request: Request,
  limits: { maxBytes: number; idleSeconds: number },
): Promise<{ path: string; written: number }> {
  const { maxBytes, idleSeconds } = limits;
  const notMultipart = () =>
    badRequest("The body must be multipart/form-data with a part named 'file'", "WriteError");
  const brokenOff = () =>
    badRequest("The upload was broken off before the multipart body's closing boundary", "WriteError");
  const isDirectory = (p: string) => badRequest(`'${p}' is a directory: upload to a file path`, "WriteError");
  const contentType = request.headers.get("content-type") ?? "";
  if (!request.body || !/^multipart\/form-data\b/i.test(contentType)) throw notMultipart();
  if (path.endsWith("/")) throw isDirectory(path);
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: { "content-type": contentType },
      limits: { ...MULTIPART_LIMITS, fileSize: maxBytes },
    });
  } catch {
    throw notMultipart();
  }
  const source = Readable.fromWeb(request.body as import("node:stream/web").ReadableStream);

  const p = shellQuote(path);
  // Beside the target (the same file system, so the rename is atomic); a symlink's target is written.
  const temp = shellQuote(`.hangar-upload-${randomUUID()}`);
  const target = `p=${p}; if [ -L "$p" ]; then p=$(readlink -f -- "$p") || exit 1; fi; d=\${p%/*}; t="\${d}/"${temp}`;

  const state: { writer: Transfer | null; written: number } = { writer: null, written: 0 };
  const outcome = new Promise<void>((resolve, reject) => {
    const fail = (err: unknown) => {
      source.unpipe(parser);
      source.destroy();
      // Not within busboy's own callback (a 'limit' is emitted mid-write; busboy then still uses its part).
      process.nextTick(() => parser.destroy());
      state.writer?.proc.kill();
      reject(err);
    };
    source.on("error", () => fail(brokenOff()));
    parser.on("error", (err: Error) =>
      fail(/unexpected end/i.test(err.message) ? brokenOff() : notMultipart()),
    );
    parser.on("file", (name: string, file: Readable) => {
      if (name !== "file" || state.writer) return void file.resume();
      let writer: Transfer;
      try {
        writer = transferCommand(
          service,
          box,
          `${target}; [ -d "$p" ] && exit 45; if [ -n "$d" ]; then mkdir -p -- "$d" || exit 1; fi; ` +
            `cat > "$t" || { rm -f -- "$t"; exit 1; }`,
          idleSeconds,
        );
      } catch (err) {
        return fail(err);
      }
      state.writer = writer;
      writer.proc.stdin.on("error", () => {}); // a command that died: its exit says why
      // Busboy destroys the part with an error when the body ends before its closing boundary.
      file.on("error", () => fail(brokenOff()));
      file.on("data", (chunk: Buffer) => {
        state.written += chunk.length;
        writer.moved();
      });
      file.on("limit", () =>
        fail(
          tooLarge(
            `File larger than ${maxBytes / 2 ** 20} MiB (the upload limit, HANGAR_SANDBOX_MAX_UPLOAD_MB)`,
            "WriteError",
          ),
        ),
      );
      file.on("end", () => {
        if (!(file as Readable & { truncated?: boolean }).truncated) writer.proc.stdin.end();
      });
      file.pipe(writer.proc.stdin as NodeJS.WritableStream, { end: false });
      void writer.exited.then(() => resolve());
    });
    parser.on("close", () => {
      if (!state.writer) fail(notMultipart());
    });
    source.pipe(parser);
  });

  try {
    await outcome;
  } catch (err) {
    if (state.writer) {
      await state.writer.exited;
      await run(service, box, `${target}; rm -f -- "$t"`, idleSeconds);
    }
    throw err;
  }
  const writer = state.writer!;
  // The command ended before the body did (it failed): the rest of the body is not read.
  source.unpipe(parser);
  source.destroy();
  const code = await writer.exited;
  if (code === 45) throw isDirectory(path);
  if (code !== 0) {
    // A killed writer (the idle timeout) had no chance to remove its temporary file.
    await run(service, box, `${target}; rm -f -- "$t"`, idleSeconds);
    const why = writer.idled()
      ? `no byte arrived for ${idleSeconds} s (HANGAR_SANDBOX_FILE_IDLE_TIMEOUT_SECONDS)`
      : writer.stderr() || `exit ${code}`;
    throw badRequest(`Could not write ${path}: ${why}`, "WriteError");
  }
  // The replaced file's mode is kept (a re-uploaded script stays executable); -T: never into a directory.
  const moved = await run(
    service,
    box,
    `${target}; if [ -f "$p" ]; then chmod "$(stat -c %a -- "$p")" "$t" || exit 1; fi; mv -fT -- "$t" "$p"`,
    idleSeconds,
  );
  if (moved.code !== 0) {
    await run(service, box, `${target}; rm -f -- "$t"`, idleSeconds);
    throw badRequest(`Could not write ${path}: ${moved.stderr || `exit ${moved.code}`}`, "WriteError");
  }
  return { path, written: state.written };
}
