/**
 * The command starter: how a command enters a sandbox whose init the server started (bwrap.ts, runc.ts)
 * without a program started on the host per command (a spawn through nsenter or `runc exec` costs
 * program starts and namespace joins).
 *
 * The sandbox's pid 2 is STARTER, run by the image's /bin/sh. The server writes each command as a script
 * into the sandbox's io directory (the host's `<state>/<id>/io`, bound read-only at /dev/.hangar, so
 * nothing the sandbox does can make the server write elsewhere) with three FIFOs for its stdin, stdout
 * and stderr, and sends its id to the starter, which forks it into the background and reports its pid
 * and, later, its exit code on its stdout. The command is already in the sandbox's namespaces and
 * cgroups, with what everything under its pid 1 has. A kill sends SIGKILL to the command's whole
 * process tree, found from the host through /proc.
 */
import { type ChildProcess, execFile, execFileSync } from "node:child_process";
import { closeSync, constants, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { lchown, rm, writeFile } from "node:fs/promises";
import { Socket } from "node:net";
import path from "node:path";
import { PassThrough, Writable } from "node:stream";
import type { ExecProcess, ExecRequest } from "../provisioner.js";

/** Where the sandbox sees its io directory (in its /dev, a tmpfs: nothing lands in its files). */
export const IO_IN_SANDBOX = "/dev/.hangar";

/**
 * The command starter, the sandbox's pid 2. For each command id it reads, it runs the command's script
 * in the background with its FIFOs as stdio, and says on fd 3 (its stdout, the server's pipe; commands
 * do not inherit it) `pid <id> <pid>` at once, `open <id>` once the command holds its FIFOs (the
 * server then may end its stdin) and `done <id> <code>` when the script's shell exits.
 */
export const STARTER = `exec 3>&1 >/dev/null
io=${IO_IN_SANDBOX}
while read -r id; do
  { ( exec <"$io/$id/in" >"$io/$id/out" 2>"$io/$id/err"; echo "open $id" >&3; exec 3>&-; . "$io/$id/run" )
    echo "done $id $?" >&3; } &
  echo "pid $id $!" >&3
done`;
/**
 * A command longer than this is handed to its shell as a file the shell sources (`shell -c '. file'`,
 * which needs a POSIX shell: sh, bash, dash, zsh), not as an argument: one argument may hold at most
 * 128 KiB (Linux's MAX_ARG_STRLEN), and a longer one fails to start (E2BIG).
 */
export const LONG_COMMAND_BYTES = 64 * 1024;
/** What the shell runs with `-c`: the command itself, or a `.` of the file holding a long one. */
export const isLongCommand = (command: string) => Buffer.byteLength(command) > LONG_COMMAND_BYTES;
export const sourceFile = (file: string) => `. ${quote(file)}`;

/** The longest report line the starter may write (`done c123456 255` is far shorter). */
const MAX_REPORT = 64;
/** FIFO triples made ahead (one `sh` for many), so a command does not wait for them. */
const FIFO_BATCH = 16;

/** Names a shell can export (an image's `Env` may hold others: they are left out). */
const SHELL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Variables bash keeps read-only (an export of one would end the command's script). */
const READ_ONLY_VARIABLES = new Set(["UID", "EUID", "PPID", "SHELLOPTS", "BASHOPTS", "BASH_VERSINFO"]);

/** A shell word: the text single-quoted. */
const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** What the starter says of a command. */
interface CommandEvents {
  onPid(pid: number): void;
  onOpen(): void;
  onDone(code: number): void;
}

/** The starter's side of a sandbox, on the server. */
export class Starter {
  readonly #pending = new Map<string, CommandEvents>();
  readonly #ready: string[] = [];
  #refilling: Promise<void> | null = null;
  #dead = false;
  #next = 0;

  /**
   * `owner`: the host uid of root inside (a user namespace's mapped root, else 0), who must open the
   * FIFOs and read the scripts.
   */
  constructor(
    readonly init: ChildProcess,
    readonly ioDir: string,
    readonly owner = 0,
  ) {
    // The starter runs the image's /bin/sh, which the sandbox may have replaced: what it says is
    // read as untrusted, a line at most MAX_REPORT long, and anything else ends the sandbox.
    let partial = "";
    init.stdout!.setEncoding("latin1").on("data", (chunk: string) => {
      const lines = (partial + chunk).split("\n");
      partial = lines.pop()!;
      if (partial.length > MAX_REPORT) return void init.kill("SIGKILL");
      for (const line of lines) {
        const match = /^(pid|open|done) (c\d+)(?: (\d+))?$/.exec(line);
        if (!match) return void init.kill("SIGKILL");
        const command = this.#pending.get(match[2]!);
        if (match[1] === "pid") command?.onPid(Number(match[3]));
        else if (match[1] === "open") command?.onOpen();
        else {
          this.forget(match[2]!);
          command?.onDone(Number(match[3]));
        }
      }
    });
    init.once("exit", () => {
      this.#dead = true;
      for (const [id, command] of this.#pending) {
        this.forget(id);
        command.onDone(137); // the sandbox died with it
      }
    });
    init.stdin!.on("error", () => {}); // written to after the sandbox died: its commands end as above
    this.refill();
  }

  /** Makes FIFO_BATCH more io directories (in, out, err FIFOs) unless a refill is under way. */
  refill(): Promise<void> {
    if (this.#dead) return Promise.resolve();
    this.#refilling ??= new Promise<void>((resolve) => {
      const dirs = Array.from({ length: FIFO_BATCH }, () => path.join(this.ioDir, `c${this.#next++}`));
      const script = `for d; do mkdir -m 700 "$d" && mkfifo -m 600 "$d/in" "$d/out" "$d/err"; done
[ ${this.owner} = 0 ] || chown -R ${this.owner}:${this.owner} "$@"`;
      execFile("/bin/sh", ["-c", script, "sh", ...dirs], (err) => {
        if (!err) this.#ready.push(...dirs.map((d) => path.basename(d)));
        this.#refilling = null;
        resolve();
      });
    });
    return this.#refilling;
  }

  /** An io directory for a command, made now if none is ready. */
  take(): string {
    if (this.#ready.length <= FIFO_BATCH / 2) void this.refill();
    const id = this.#ready.shift();
    if (id) return id;
    const made = `c${this.#next++}`;
    const dir = path.join(this.ioDir, made);
    mkdirSync(dir, { mode: 0o700 });
    execFileSync("mkfifo", ["-m", "600", `${dir}/in`, `${dir}/out`, `${dir}/err`]);
    if (this.owner) execFileSync("chown", ["-R", `${this.owner}:${this.owner}`, dir]);
    return made;
  }

  /** The sandbox stopped: no more io directories are made (resolves once one under way is done). */
  async stop(): Promise<void> {
    this.#dead = true;
    await this.#refilling;
  }

  start(id: string, handlers: CommandEvents): void {
    if (this.#dead) {
      handlers.onDone(137);
      return;
    }
    this.#pending.set(id, handlers);
    this.init.stdin!.write(`${id}\n`);
  }

  forget(id: string): void {
    this.#pending.delete(id);
    void rm(path.join(this.ioDir, id), { recursive: true, force: true });
  }
}

/**
 * Starts `request` through the sandbox's starter: its script and FIFOs in a new io directory, its id
 * to the starter. `killTree(pid)` kills the command's process tree from its pid inside.
 */
export function startCommand(
  starter: Starter,
  request: ExecRequest,
  env: Record<string, string>,
  killTree: (nsPid: number) => void,
): ExecProcess {
  const id = starter.take();
  const dir = path.join(starter.ioDir, id);
  const long = isLongCommand(request.command);
  const run = [
    ...Object.entries(env)
      .filter(([k]) => SHELL_NAME.test(k) && !READ_ONLY_VARIABLES.has(k))
      .map(([k, v]) => `export ${k}=${quote(v)}`),
    `cd -- ${quote(request.cwd)} || exit 1`,
    `exec ${quote(request.shell)} -c ${quote(long ? sourceFile(`${IO_IN_SANDBOX}/${id}/command`) : request.command)}`,
  ].join("\n");
  // Held open read-write: no reader sees end-of-file before the command opens its end, and opening
  // never waits for it. stdin ends when the server closes its end.
  const fds: number[] = [];
  try {
    for (const name of ["out", "err", "in"]) {
      fds.push(openSync(path.join(dir, name), constants.O_RDWR | constants.O_NONBLOCK));
    }
  } catch (err) {
    for (const fd of fds) closeSync(fd);
    starter.forget(id);
    throw err;
  }
  const fifo = (fd: number, direction: "readable" | "writable") =>
    new Socket({ fd, readable: direction === "readable", writable: direction === "writable" });
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const [outFifo, errFifo, inFifo] = [
    fifo(fds[0]!, "readable"),
    fifo(fds[1]!, "readable"),
    fifo(fds[2]!, "writable"),
  ];
  outFifo.pipe(stdout, { end: false });
  errFifo.pipe(stderr, { end: false });
  for (const s of [outFifo, errFifo, inFifo]) s.on("error", () => {});
  // The command's stdin ends when the server closes its end, which must wait until the command
  // has opened its own: a FIFO with no writer when its reader opens it would block that open.
  let opened = false;
  let ended = false;
  const closeStdin = () => {
    if (opened && ended) inFifo.destroy();
  };
  const stdin = new Writable({
    write: (chunk, _encoding, done) => {
      if (inFifo.destroyed) return done();
      inFifo.write(chunk, () => done());
    },
    final: (done) => {
      ended = true;
      closeStdin();
      done();
    },
  });
  stdin.on("error", () => {});

  let pid: number | null = null;
  let killRequested = false;
  let settle!: (code: number) => void;
  const exited = new Promise<number>((resolve) => {
    settle = resolve;
  });
  let settled = false;
  const finish = (code: number) => {
    if (settled) return;
    settled = true;
    // What the command wrote before it exited is in the FIFOs: read it (one more poll), then end.
    setTimeout(() =>
      setImmediate(() => {
        for (const [fifoEnd, pass] of [
          [outFifo, stdout],
          [errFifo, stderr],
        ] as const) {
          fifoEnd.unpipe(pass);
          fifoEnd.destroy();
          pass.end();
        }
        inFifo.destroy();
      }),
    );
    settle(code);
  };
  const kill = () => {
    if (pid !== null) killTree(pid);
  };
  const script = path.join(dir, "run");
  const commandFile = path.join(dir, "command");
  const written = async (file: string, text: string) => {
    await writeFile(file, text, { mode: 0o600 });
    if (starter.owner) await lchown(file, starter.owner, starter.owner);
  };
  void Promise.all([written(script, run), long ? written(commandFile, request.command) : undefined]).then(
    () =>
      // Killed before it started: it never starts. Otherwise the starter keeps listening to it until
      // its `done` (a kill that came before its pid still reaches it then).
      settled
        ? starter.forget(id)
        : starter.start(id, {
            onPid: (p) => {
              pid = p;
              if (killRequested) kill();
            },
            onOpen: () => {
              opened = true;
              closeStdin();
            },
            onDone: finish,
          }),
    () => {
      starter.forget(id);
      finish(127);
    },
  );
  return {
    stdout,
    stderr,
    stdin,
    exited,
    kill() {
      if (settled) return; // its pid may be another process's by now
      killRequested = true;
      kill();
      finish(137);
    },
  };
}

/** How long a kill waits for the processes it stopped to be stopped (a process in the kernel may take a while). */
const STOP_WAIT_MS = 200;

/**
 * SIGKILL to a process of the sandbox (`nsPid`, its pid inside) and everything it started, found
 * through /proc: the sandbox's host processes (its cgroup's, else all) whose pid namespace is pid 1's.
 * The tree may fork while it is read: a child forked after the read would outlive its killed parent,
 * handed to pid 1, no longer known as the command's. So the tree is frozen first: SIGSTOP to each
 * process found, read again once all their threads have stopped (a stopped process neither forks nor
 * exits), until no new one appears; then SIGKILL to them all. Each process is known by its pid and its
 * start time, so a pid freed meanwhile and given to another process is never signalled.
 */
export async function killSandboxTree(
  pid1: number,
  nsPid: number,
  cgroupProcs: string | undefined,
): Promise<void> {
  let pidNs: string;
  try {
    pidNs = readlinkSync(`/proc/${pid1}/ns/pid`);
    // pid 1 died and its pid went to a host process: nothing of the sandbox is left to kill.
    if (pidNs === readlinkSync("/proc/self/ns/pid")) return;
  } catch {
    return; // the sandbox is gone, and its processes with it
  }
  const stopped = new Map<string, string>(); // host pid → start time
  try {
    for (;;) {
      const fresh = [...commandTree(pidNs, nsPid, cgroupProcs)].filter(([hostPid]) => !stopped.has(hostPid));
      if (fresh.length === 0) break;
      for (const [hostPid, started] of fresh) {
        signal(hostPid, started, "SIGSTOP");
        stopped.set(hostPid, started);
      }
      const deadline = Date.now() + STOP_WAIT_MS;
      while (!fresh.every(([hostPid]) => isStopped(hostPid)) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 1));
    }
  } catch {
    // /proc could not be read (callers do not wait for the kill): what was stopped is killed all the same.
  }
  for (const [hostPid, started] of stopped) signal(hostPid, started, "SIGKILL");
}

/** The process `nsPid` of the pid namespace `pidNs` and all its descendants: host pid → start time. */
function commandTree(pidNs: string, nsPid: number, cgroupProcs: string | undefined): Map<string, string> {
  const hostPids = (() => {
    if (!cgroupProcs) return readdirSync("/proc").filter((p) => /^\d+$/.test(p));
    try {
      return readFileSync(cgroupProcs, "utf8").split("\n").filter(Boolean);
    } catch {
      return []; // the group is gone with the sandbox
    }
  })();
  const parentOf = new Map<string, string>();
  const startOf = new Map<string, string>();
  let root: string | undefined;
  for (const hostPid of hostPids) {
    try {
      if (readlinkSync(`/proc/${hostPid}/ns/pid`) !== pidNs) continue;
      const status = readFileSync(`/proc/${hostPid}/status`, "utf8");
      const started = startTime(hostPid);
      if (started === undefined) continue;
      parentOf.set(hostPid, /^PPid:\s+(\d+)/m.exec(status)?.[1] ?? "");
      startOf.set(hostPid, started);
      const nsPids = /^NSpid:\s+(.+)$/m.exec(status)?.[1]?.trim().split(/\s+/) ?? [];
      if (Number(nsPids.at(-1)) === nsPid) root = hostPid;
    } catch {} // exited meanwhile
  }
  const tree = new Map<string, string>();
  if (!root) return tree;
  tree.set(root, startOf.get(root)!);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [child, parent] of parentOf) {
      if (!tree.has(child) && tree.has(parent)) {
        tree.set(child, startOf.get(child)!);
        grew = true;
      }
    }
  }
  return tree;
}

/** Fields of /proc/<pid>[/task/<tid>]/stat after the command name (field 3, the state, first). */
function statFields(file: string): string[] | undefined {
  try {
    const stat = readFileSync(file, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/** When the process started (field 22, in clock ticks since boot): with its pid, who it is. */
const startTime = (hostPid: string) => statFields(`/proc/${hostPid}/stat`)?.[19];

/** Every thread stopped (or a zombie), or the process gone: it will fork no more. */
function isStopped(hostPid: string): boolean {
  let threads: string[];
  try {
    threads = readdirSync(`/proc/${hostPid}/task`);
  } catch {
    return true;
  }
  return threads.every((tid) => "TtZX".includes(statFields(`/proc/${hostPid}/task/${tid}/stat`)?.[0] ?? "X"));
}

/** Sends `name` to the process if it is still the one that started at `started` (its pid not reused). */
function signal(hostPid: string, started: string, name: NodeJS.Signals): void {
  if (startTime(hostPid) !== started) return;
  try {
    process.kill(Number(hostPid), name);
  } catch {} // exited meanwhile
}
