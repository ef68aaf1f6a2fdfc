/**
 * Commands running in sandboxes, as the data plane sees them: each has an id, its stdout and stderr
 * kept as byte logs (so a WebSocket client that reconnects resumes at its byte offsets), an exit code,
 * and listeners (the WebSocket connections attached to it). Independent of the driver, which only
 * provides the process (`ExecProcess`).
 */
import { randomUUID } from "node:crypto";
import { StringDecoder } from "node:string_decoder";
import type { ExecProcess } from "./provisioner.js";

/**
 * Output kept for reconnects: at least the last this many bytes of each stream (whole chunks: up to a
 * pipe read more), so a client that lost its connection resumes at its offsets if they are this recent
 * (older offsets: `SessionExpired`).
 */
export const KEPT_BYTES_PER_STREAM = 2 * 2 ** 20;
/**
 * What every command of this server keeps for reconnects together: a stream whose next chunk would pass
 * it gives up its own oldest bytes first and, having none, keeps nothing (its older offsets expire).
 * So the server holds at most this much whatever the number of commands or sandboxes.
 */
export const KEPT_BYTES_IN_ALL = 128 * 2 ** 20;
let keptInAll = 0;

/** After the command exits, how long output still in a pipe may take to arrive. A background process
 * that inherited the pipe would otherwise hold the command open forever. */
const DRAIN_GRACE_MS = 200;

/**
 * The grace period, ended only after one more I/O poll of the event loop: a loop that fell behind (a
 * starved CPU, a long synchronous task) runs its due timers before it polls, and would otherwise cut
 * off output that was already in the pipe when the command exited.
 */
const drainGrace = () =>
  new Promise<void>((resolve) => setTimeout(() => setImmediate(resolve), DRAIN_GRACE_MS));

export type StreamName = "stdout" | "stderr";

export type CommandEvent =
  | { type: "stdout" | "stderr"; data: string; offset: number }
  | { type: "exit"; exit_code: number }
  | { type: "error"; error_type: string; error: string };

class OutputLog {
  /** The stream's most recent bytes (KEPT_BYTES_PER_STREAM and at most one chunk more), ending at `#received`. */
  #chunks: Buffer[] = [];
  #kept = 0;
  #received = 0;
  /** Bytes emitted as complete UTF-8 text so far: the offset of the next event. */
  emitted = 0;
  readonly #decoder = new StringDecoder("utf8");

  /** Appends bytes; returns the text that is complete (a split multi-byte character waits). */
  push(chunk: Buffer): { data: string; offset: number } | null {
    this.#keep(chunk);
    const data = this.#decoder.write(chunk);
    if (!data) return null;
    const offset = this.emitted;
    this.emitted += Buffer.byteLength(data);
    return { data, offset };
  }

  #keep(chunk: Buffer): void {
    this.#received += chunk.length;
    this.#chunks.push(chunk);
    this.#kept += chunk.length;
    keptInAll += chunk.length;
    // The oldest chunk goes while the rest still covers the window, or while all output kept is over
    // the budget (then this stream keeps less, down to nothing).
    while (
      this.#chunks.length > 0 &&
      (this.#kept - this.#chunks[0]!.length >= KEPT_BYTES_PER_STREAM || keptInAll > KEPT_BYTES_IN_ALL)
    ) {
      this.#forget(this.#chunks.shift()!);
    }
  }

  #forget(chunk: Buffer): void {
    this.#kept -= chunk.length;
    keptInAll -= chunk.length;
  }

  end(): { data: string; offset: number } | null {
    const data = this.#decoder.end();
    if (!data) return null;
    const offset = this.emitted;
    this.emitted += Buffer.byteLength(data);
    return { data, offset };
  }

  /** The text from `offset` up to what was emitted, or null when that part is not kept. */
  since(offset: number): string | null {
    if (offset === this.emitted) return "";
    const start = this.#received - this.#kept;
    if (offset > this.emitted || offset < start) return null;
    return Buffer.concat(this.#chunks)
      .subarray(offset - start, this.emitted - start)
      .toString("utf8");
  }

  /** Gives the kept bytes back (the command is no longer reconnectable). */
  release(): void {
    for (const chunk of this.#chunks) this.#forget(chunk);
    this.#chunks = [];
  }
}

export interface CommandOptions {
  timeoutSeconds: number;
  /** Kill when the last attached client has been gone this long (0 = never). */
  idleTimeoutSeconds: number;
  killOnDisconnect: boolean;
  /** How long the finished command stays available for reconnects. */
  keepSeconds: number;
}

type Listener = (event: CommandEvent) => void;

export class CommandRun {
  readonly id: string;
  readonly stdout = new OutputLog();
  readonly stderr = new OutputLog();
  exitCode: number | null = null;
  timedOut = false;
  readonly done: Promise<void>;
  readonly #listeners = new Set<Listener>();
  /** Listeners that cannot take more output now: while any does, the command's pipes are not read. */
  readonly #holds = new Set<Listener>();
  #released: (() => void) | null = null;
  readonly #process: ExecProcess;
  readonly #options: CommandOptions;
  #idleTimer: NodeJS.Timeout | null = null;

  constructor(process: ExecProcess, options: CommandOptions, id?: string) {
    this.id = id ?? randomUUID();
    this.#process = process;
    this.#options = options;
    const timer = setTimeout(() => {
      this.timedOut = true;
      process.kill();
    }, options.timeoutSeconds * 1000);
    let allRead = false;
    const drained = Promise.all([this.#pump("stdout"), this.#pump("stderr")]).then(() => {
      allRead = true;
    });
    this.done = process.exited.then(async (code) => {
      clearTimeout(timer);
      this.#clearIdle();
      // The grace runs only while the output is read: a held command's last output is not cut off.
      for (;;) {
        await Promise.race([drained, drainGrace()]);
        if (allRead || this.#holds.size === 0) break;
        await new Promise<void>((resolve) => {
          this.#released = resolve;
        });
      }
      for (const name of ["stdout", "stderr"] as const) {
        const rest = this[name].end();
        if (rest) this.#emit({ type: name, ...rest });
        (process[name] as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
      }
      this.exitCode = code;
      this.#emit(
        this.timedOut
          ? {
              type: "error",
              error_type: "CommandTimeout",
              error: `Command timed out after ${options.timeoutSeconds} seconds and was killed`,
            }
          : { type: "exit", exit_code: code },
      );
      this.#listeners.clear();
      this.#holds.clear();
    });
    void this.done.then(this.#wakeWriters);
    this.#armIdle();
  }

  get finished(): boolean {
    return this.exitCode !== null;
  }

  #pump(name: StreamName): Promise<void> {
    const stream = this.#process[name];
    return new Promise((resolve) => {
      stream.on("data", (chunk: Buffer) => {
        const text = this[name].push(chunk);
        if (text) this.#emit({ type: name, ...text });
      });
      stream.once("end", resolve);
      stream.once("close", resolve);
      stream.once("error", resolve);
    });
  }

  /** A listener that throws is detached: nothing a client does reaches the pipes' handlers. */
  #emit(event: CommandEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch {
        this.#listeners.delete(listener);
        this.release(listener);
      }
    }
  }

  /**
   * `listener` takes no more output for now: the command's pipes are not read (it blocks writing).
   * (A pipe that is a child's own stdout, gVisor's `runsc exec`, Node reads out when the child exits:
   * at most a pipe's worth then arrives while held.)
   */
  hold(listener: Listener): void {
    if (this.#holds.size === 0 && !this.finished) {
      this.#process.stdout.pause();
      this.#process.stderr.pause();
    }
    this.#holds.add(listener);
  }

  /** `listener` takes output again; the pipes are read once no listener holds them. */
  release(listener: Listener): void {
    if (!this.#holds.delete(listener) || this.#holds.size > 0) return;
    this.#process.stdout.resume();
    this.#process.stderr.resume();
    this.#released?.();
    this.#released = null;
  }

  /** The output kept for reconnects is given back (the command is forgotten). */
  forget(): void {
    this.stdout.release();
    this.stderr.release();
  }

  /**
   * Attaches a listener: it first gets the output since the offsets, then live events, then the exit.
   * Returns a detach function, or null when the requested output is no longer kept.
   */
  attach(listener: Listener, offsets = { stdout: 0, stderr: 0 }): (() => void) | null {
    const backlog = { stdout: this.stdout.since(offsets.stdout), stderr: this.stderr.since(offsets.stderr) };
    if (backlog.stdout === null || backlog.stderr === null) return null;
    if (backlog.stdout) listener({ type: "stdout", data: backlog.stdout, offset: offsets.stdout });
    if (backlog.stderr) listener({ type: "stderr", data: backlog.stderr, offset: offsets.stderr });
    if (this.finished) {
      listener(
        this.timedOut
          ? { type: "error", error_type: "CommandTimeout", error: "Command timed out and was killed" }
          : { type: "exit", exit_code: this.exitCode! },
      );
      return () => {};
    }
    this.#listeners.add(listener);
    this.#clearIdle();
    return () => {
      this.release(listener);
      if (!this.#listeners.delete(listener) || this.finished) return;
      if (this.#listeners.size === 0) {
        if (this.#options.killOnDisconnect) this.kill();
        else this.#armIdle();
      }
    };
  }

  kill(): void {
    this.#process.kill();
  }

  /** Writes to the command's stdin; false when it has a backlog (wait for `whenWritable`). */
  write(data: string): boolean {
    return this.finished || this.#process.stdin.write(data);
  }

  /**
   * Calls `then` once the command's stdin has no backlog, or the command ended. The waiters are kept
   * only until then (one `drain` listener and one reaction to `done` for all of them), so a command
   * paused often holds nothing per pause.
   */
  whenWritable(then: () => void): void {
    if (this.finished) {
      then();
      return;
    }
    if (this.#writableWaiters.size === 0) this.#process.stdin.once("drain", this.#wakeWriters);
    this.#writableWaiters.add(then);
  }

  readonly #writableWaiters = new Set<() => void>();
  readonly #wakeWriters = () => {
    this.#process.stdin.off("drain", this.#wakeWriters);
    const waiters = [...this.#writableWaiters];
    this.#writableWaiters.clear();
    for (const then of waiters) then();
  };

  #armIdle(): void {
    if (this.#options.idleTimeoutSeconds <= 0 || this.#listeners.size > 0) return;
    this.#idleTimer = setTimeout(() => this.kill(), this.#options.idleTimeoutSeconds * 1000);
  }

  #clearIdle(): void {
    if (this.#idleTimer) clearTimeout(this.#idleTimer);
    this.#idleTimer = null;
  }
}

/** The commands of every sandbox, by sandbox id and command id; finished ones expire. */
export class CommandRegistry {
  readonly #bySandbox = new Map<string, Map<string, CommandRun>>();

  add(sandboxId: string, run: CommandRun, keepSeconds: number): void {
    const runs = this.#bySandbox.get(sandboxId) ?? new Map<string, CommandRun>();
    this.#bySandbox.set(sandboxId, runs);
    runs.set(run.id, run);
    void run.done.then(() => {
      setTimeout(() => {
        if (runs.get(run.id) === run) runs.delete(run.id);
        run.forget();
      }, keepSeconds * 1000).unref();
    });
  }

  /** How many of a sandbox's commands have not ended. */
  running(sandboxId: string): number {
    let n = 0;
    for (const run of this.#bySandbox.get(sandboxId)?.values() ?? []) if (!run.finished) n++;
    return n;
  }

  get(sandboxId: string, commandId: string): CommandRun | undefined {
    return this.#bySandbox.get(sandboxId)?.get(commandId);
  }

  /** Forgets a sandbox's commands (their processes die with the sandbox). */
  forget(sandboxId: string): void {
    for (const run of this.#bySandbox.get(sandboxId)?.values() ?? []) run.forget();
    this.#bySandbox.delete(sandboxId);
  }
}
