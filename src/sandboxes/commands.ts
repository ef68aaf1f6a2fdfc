/**
 * Commands running in sandboxes, as the data plane sees them: each has an id, its stdout and stderr
 * kept as byte logs (so a WebSocket client that reconnects resumes at its byte offsets), an exit code,
 * and listeners (the WebSocket connections attached to it). Independent of the driver, which only
 * provides the process (`ExecProcess`).
 */
import { randomUUID } from "node:crypto";
import { StringDecoder } from "node:string_decoder";
import type { ExecProcess } from "./provisioner.js";

/** Output kept per stream for reconnects; past this, output is still streamed live but not kept. */
const MAX_KEPT_BYTES = 16 * 2 ** 20;
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
  readonly #chunks: Buffer[] = [];
  #kept = 0;
  /** Bytes emitted as complete UTF-8 text so far: the offset of the next event. */
  emitted = 0;
  readonly #decoder = new StringDecoder("utf8");

  /** Appends bytes; returns the text that is complete (a split multi-byte character waits). */
  push(chunk: Buffer): { data: string; offset: number } | null {
    if (this.#kept + chunk.length <= MAX_KEPT_BYTES) {
      this.#chunks.push(chunk);
      this.#kept += chunk.length;
    }
    const data = this.#decoder.write(chunk);
    if (!data) return null;
    const offset = this.emitted;
    this.emitted += Buffer.byteLength(data);
    return { data, offset };
  }

  end(): { data: string; offset: number } | null {
    const data = this.#decoder.end();
    if (!data) return null;
    const offset = this.emitted;
    this.emitted += Buffer.byteLength(data);
    return { data, offset };
  }

  /** The text from `offset` up to what was emitted, or null when that part was not kept. */
  since(offset: number): string | null {
    if (offset > this.emitted) return null;
    if (this.emitted > this.#kept) return offset === this.emitted ? "" : null;
    return Buffer.concat(this.#chunks).subarray(offset, this.emitted).toString("utf8");
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

export class CommandRun {
  readonly id: string;
  readonly stdout = new OutputLog();
  readonly stderr = new OutputLog();
  exitCode: number | null = null;
  timedOut = false;
  readonly done: Promise<void>;
  readonly #listeners = new Set<(event: CommandEvent) => void>();
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
    const drained = Promise.all([this.#pump("stdout"), this.#pump("stderr")]);
    this.done = process.exited.then(async (code) => {
      clearTimeout(timer);
      this.#clearIdle();
      await Promise.race([drained, drainGrace()]);
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
    });
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

  #emit(event: CommandEvent): void {
    for (const listener of this.#listeners) listener(event);
  }

  /**
   * Attaches a listener: it first gets the output since the offsets, then live events, then the exit.
   * Returns a detach function, or null when the requested output is no longer kept.
   */
  attach(listener: (event: CommandEvent) => void, offsets = { stdout: 0, stderr: 0 }): (() => void) | null {
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

  write(data: string): void {
    if (!this.finished) this.#process.stdin.write(data);
  }

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
      setTimeout(() => runs.delete(run.id), keepSeconds * 1000).unref();
    });
  }

  get(sandboxId: string, commandId: string): CommandRun | undefined {
    return this.#bySandbox.get(sandboxId)?.get(commandId);
  }

  /** Forgets a sandbox's commands (their processes die with the sandbox). */
  forget(sandboxId: string): void {
    this.#bySandbox.delete(sandboxId);
  }
}
