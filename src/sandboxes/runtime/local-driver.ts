/**
 * The local sandbox driver: Linux namespaces through bubblewrap (`bwrap`), no container engine.
 * Needs root (overlay mounts, cgroups, joining namespaces) and `bwrap`, `unshare`, `nsenter`, `mount`.
 *
 * A sandbox is three nested things, all started by one `spawn`:
 *
 *   sh (joins the sandbox's cgroups) → unshare --mount (a private mount namespace, the "holder") →
 *   sh (mounts the overlays: image layers read-only + this sandbox's writable upper dirs) →
 *   bwrap --unshare-pid/net/ipc/uts/cgroup --cap-drop ALL → pid 1 (bwrap's reaper) → `sh -c 'read _'`
 *
 * The overlays exist only in the holder mount namespace, so nothing is mounted on the host and they
 * vanish with the sandbox. The init reads from a pipe the server holds: when the server dies, for any
 * reason, the read ends, pid 1 exits and the kernel kills every process of the sandbox's pid namespace
 * (`--die-with-parent` does the same from the other side).
 *
 * Each command is another spawn of the same shape: sh (joins the cgroups) → nsenter (the holder's
 * mount namespace, the init's net/ipc/uts/pid/cgroup namespaces) → bwrap (a fresh mount namespace with
 * the same merged root, the template's volumes bound at their mount paths, every capability dropped,
 * no_new_privs) → `shell -c command`. The spawn is its own process group, which is what a timeout or
 * a `kill` kills.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, existsSync, lstatSync, openSync } from "node:fs";
import { access, chmod, mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import type { ExecProcess, ExecRequest, SandboxDriver, SandboxSpec } from "../provisioner.js";
import { type Cgroups, detectCgroups } from "./cgroups.js";
import type { ImageLayer, ImageStore } from "./images.js";

/** Joins the cgroups listed before `--` (or sets an rlimit when there are none), then runs the rest. */
const JOIN_CGROUPS = `while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift
[ -z "$HANGAR_AS_LIMIT_KB" ] || ulimit -v "$HANGAR_AS_LIMIT_KB"
exec "$@"`;
/** Mounts the overlays given as (options, target) pairs before `--`, then runs the rest. */
const MOUNT_OVERLAYS = `set -e; while [ "$1" != -- ]; do mount -t overlay overlay -o "$1" "$2"; shift 2; done; shift
exec "$@"`;

/**
 * Kernel knobs under /proc that root may write by file mode alone (no capability needed): made
 * read-only. Bound from the host's /proc: the same kernel-wide values (net.* show the host's).
 */
const READ_ONLY_PROC = ["sys", "sysrq-trigger", "irq", "bus", "fs"];
/** /proc files that leak host information: hidden behind /dev/null (those this kernel has). */
const MASKED_PROC = ["kcore", "keys", "timer_list", "sched_debug", "latency_stats"];
const procHardening = (): string[] => [
  ...READ_ONLY_PROC.flatMap((p) => ["--ro-bind-try", `/proc/${p}`, `/proc/${p}`]),
  ...MASKED_PROC.filter((p) => existsSync(`/proc/${p}`)).flatMap((p) => [
    "--ro-bind",
    "/dev/null",
    `/proc/${p}`,
  ]),
];

const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/** Directories every sandbox has, made in its own layer when its image lacks them: HOME, and /tmp. */
const EXPECTED_DIRS = [
  ["root", 0o700],
  ["tmp", 0o1777],
] as const;
/** In a sandbox's state directory: the manifest digest of the imported image it was booted from. */
export const IMAGE_DIGEST_FILE = "image-digest";
const REQUIRED_TOOLS = ["bwrap", "unshare", "nsenter", "mount"];

export interface LocalDriverOptions {
  /** Per-sandbox state: `<stateDir>/<id>/` holds the writable layers (the sandbox's own files). */
  stateDir: string;
  images: ImageStore;
  /** The host directory backing a volume. */
  volumePath(volumeId: string): string;
  /** Most processes a sandbox may have at once. */
  pidsMax: number;
  /** Told when a running sandbox's init exits without `stop` (it crashed or was killed). */
  onExit?: (id: string, reason: string) => void;
}

interface Running {
  spec: SandboxSpec;
  /** The image's environment, under each command's own. */
  env: Record<string, string>;
  init: ChildProcess;
  /** Host pid of the holder (outer bwrap, in the private mount namespace) and of the sandbox's pid 1. */
  holderPid: number;
  pid1: number;
  cgroupProcs: string[];
  stopping: boolean;
  exited: Promise<void>;
}

const SIGNALS: Record<string, number> = {
  SIGKILL: 9,
  SIGTERM: 15,
  SIGINT: 2,
  SIGHUP: 1,
  SIGSEGV: 11,
  SIGABRT: 6,
};

export class LocalSandboxDriver implements SandboxDriver {
  readonly #opts: LocalDriverOptions;
  readonly #cgroups: Cgroups | null;
  readonly #running = new Map<string, Running>();
  readonly #booting = new Map<string, Promise<void>>();
  #cleanedUp: Promise<void> | null = null;

  constructor(opts: LocalDriverOptions) {
    this.#opts = opts;
    this.#cgroups = detectCgroups(opts.stateDir);
  }

  /** cgroup version used for limits, or null when only an address-space rlimit applies. */
  get cgroupVersion(): 1 | 2 | null {
    return this.#cgroups?.version ?? null;
  }

  async unavailable(): Promise<string | null> {
    if (process.platform !== "linux") return "the local sandbox driver needs Linux";
    if (process.getuid?.() !== 0) {
      return "the local sandbox driver needs root (overlay mounts, cgroups and joining namespaces)";
    }
    const missing: string[] = [];
    for (const tool of REQUIRED_TOOLS) if (!(await onPath(tool))) missing.push(tool);
    if (missing.length) {
      return `the local sandbox driver needs ${missing.join(", ")} on PATH (Debian: apt-get install bubblewrap util-linux mount)`;
    }
    if (/[,:]/.test(this.#opts.stateDir))
      return `the sandbox state directory must not contain ',' or ':': ${this.#opts.stateDir}`;
    return null;
  }

  imageProblem(image: string): Promise<string | null> {
    return this.#opts.images.problem(image);
  }

  isRunning(id: string): boolean {
    return this.#running.has(id);
  }

  boot(spec: SandboxSpec): Promise<void> {
    if (this.#running.has(spec.id)) return Promise.resolve();
    let booting = this.#booting.get(spec.id);
    if (!booting) {
      booting = this.#boot(spec).finally(() => this.#booting.delete(spec.id));
      this.#booting.set(spec.id, booting);
    }
    return booting;
  }

  async #boot(spec: SandboxSpec): Promise<void> {
    const problem = await this.unavailable();
    if (problem) throw new Error(problem);
    // Cgroups left by a server that crashed: their processes died with it.
    this.#cleanedUp ??= this.#cgroups?.removeStale(new Set()).catch(() => {}) ?? Promise.resolve();
    await this.#cleanedUp;

    // A sandbox booted before keeps the image content its own layer was written over. The content it
    // uses is recorded under the store's lock, so a removal running meanwhile sees it in use.
    const digestFile = path.join(this.#dir(spec.id), IMAGE_DIGEST_FILE);
    const image = await this.#opts.images.withLock(async () => {
      const pinned = await readFile(digestFile, "utf8").catch(() => undefined);
      const resolved = await this.#opts.images.resolve(spec.image, pinned);
      await mkdir(this.#dir(spec.id), { recursive: true });
      await writeFile(digestFile, resolved.digest ?? "");
      return resolved;
    });
    const root = this.#root(spec.id);
    const mountArgs = await this.#prepareLayers(spec.id, image.layers);
    const cgroupProcs = this.#cgroups
      ? await this.#cgroups.create(spec.id, {
          memoryBytes: spec.memoryBytes,
          cpuMillicores: spec.cpuMillicores,
          pids: this.#opts.pidsMax,
        })
      : [];
    const init = spawn(
      "/bin/sh",
      [
        "-c",
        JOIN_CGROUPS,
        "hangar-sandbox",
        ...cgroupProcs,
        "--",
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "--",
        "/bin/sh",
        "-c",
        MOUNT_OVERLAYS,
        "hangar-sandbox",
        ...mountArgs,
        "--",
        "bwrap",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--cap-drop",
        "ALL",
        "--hostname",
        spec.hostname,
        "--info-fd",
        "3",
        "--bind",
        root,
        "/",
        "--proc",
        "/proc",
        ...procHardening(),
        "--dev",
        "/dev",
        "--clearenv",
        "--",
        "/bin/sh",
        "-c",
        "read _",
      ],
      { stdio: ["pipe", "ignore", "pipe", "pipe"], env: this.#limitEnv(spec) },
    );
    let stderr = "";
    init.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
      if (stderr.length < 4096) stderr += chunk;
    });
    const exited = new Promise<void>((resolve) => init.once("exit", () => resolve()));
    let pid1: number;
    try {
      pid1 = await readChildPid(init);
    } catch {
      init.kill("SIGKILL");
      await exited;
      await this.#cgroups?.remove(spec.id).catch(() => {});
      throw new Error(`the sandbox did not start: ${stderr.trim() || "its init exited"}`);
    }
    const running: Running = {
      spec,
      env: image.env,
      init,
      holderPid: init.pid!,
      pid1,
      cgroupProcs,
      stopping: false,
      exited,
    };
    this.#running.set(spec.id, running);
    void exited.then(() => {
      if (this.#running.get(spec.id) !== running) return;
      this.#running.delete(spec.id);
      if (!running.stopping) this.#opts.onExit?.(spec.id, stderr.trim() || "the sandbox's init exited");
    });

    // Ready means a command runs: this checks the image's shell and the whole exec path once.
    const probe = this.exec(spec.id, { shell: "/bin/sh", command: "exit 0", env: {}, cwd: "/" });
    let probeErr = "";
    probe.stderr.on("data", (chunk: Buffer) => {
      probeErr += chunk.toString("utf8");
    });
    probe.stdout.resume();
    const code = await probe.exited;
    if (code !== 0) {
      await this.#halt(spec.id); // not stop(): that waits for this very boot
      // The init's own complaint (e.g. "execvp /bin/sh: No such file or directory") says more than nsenter's.
      throw new Error(
        `the sandbox cannot run commands: ${stderr.trim() || probeErr.trim() || `exit ${code}`}`,
      );
    }
  }

  /**
   * Creates each layer's upper and work dirs; returns the overlay (options, target) pairs. The root
   * layer gets the directories commands expect (HOME and a /tmp) in the sandbox's own layer when the
   * image has none (a minimal image may not).
   */
  async #prepareLayers(id: string, layers: ImageLayer[]): Promise<string[]> {
    const root = this.#root(id);
    await mkdir(root, { recursive: true });
    const args: string[] = [];
    for (const [i, layer] of layers.entries()) {
      const upper = path.join(this.#dir(id), `layer-${i}`, "upper");
      const work = path.join(this.#dir(id), `layer-${i}`, "work");
      await mkdir(upper, { recursive: true });
      await mkdir(work, { recursive: true });
      if (layer.at === "/") {
        for (const [dir, mode] of EXPECTED_DIRS) {
          if (layer.lower.some((lower) => lexists(path.join(lower, dir)))) continue;
          // Only where the sandbox's own layer has nothing: what it left there (a symlink to a host
          // path, say) must not be followed by the server.
          if (lexists(path.join(upper, dir))) continue;
          await mkdir(path.join(upper, dir));
          await chmod(path.join(upper, dir), mode);
        }
      }
      const target = layer.at === "/" ? root : path.join(root, layer.at);
      // overlayfs separates lower dirs with ':'; one in a directory's name (python:3.12-slim) is escaped.
      const lower = layer.lower.map((dir) => dir.replaceAll(":", "\\:")).join(":");
      args.push(`lowerdir=${lower},upperdir=${upper},workdir=${work}`, target);
    }
    return args;
  }

  /** Without cgroups the memory limit becomes an address-space rlimit (coarser: it counts mappings). */
  #limitEnv(spec: SandboxSpec): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? DEFAULT_PATH };
    if (!this.#cgroups) env.HANGAR_AS_LIMIT_KB = String(Math.ceil(spec.memoryBytes / 1024));
    return env;
  }

  #dir(id: string): string {
    if (!/^[0-9a-f-]{36}$/i.test(id)) throw new Error(`not a sandbox id: ${id}`);
    return path.join(this.#opts.stateDir, id);
  }

  #root(id: string): string {
    return path.join(this.#dir(id), "root");
  }

  exec(id: string, request: ExecRequest): ExecProcess {
    const running = this.#running.get(id);
    if (!running) throw new Error(`sandbox ${id} is not running`);
    const { holderPid, pid1, spec, env: imageEnv } = running;
    const ns = (kind: string) => `/proc/${pid1}/ns/${kind}`;
    const pidns = openSync(ns("pid"), "r");
    const env = { PATH: DEFAULT_PATH, HOME: "/root", ...imageEnv, HOSTNAME: spec.hostname, ...request.env };
    const child = spawn(
      "/bin/sh",
      [
        "-c",
        JOIN_CGROUPS,
        "hangar-exec",
        ...running.cgroupProcs,
        "--",
        "nsenter",
        `--mount=/proc/${holderPid}/ns/mnt`,
        `--net=${ns("net")}`,
        `--ipc=${ns("ipc")}`,
        `--uts=${ns("uts")}`,
        `--cgroup=${ns("cgroup")}`,
        "--",
        "bwrap",
        // Joined by bwrap itself (fd 3), not nsenter: bwrap only mounts a fresh /proc for a pid namespace it set up.
        "--pidns",
        "3",
        // No --die-with-parent: to join the pid namespace bwrap forks an intermediate process that exits
        // at once, and a command whose parent-death signal was bound to it before it exited (a race a
        // loaded machine loses) was killed at start (exit 137). The command needs none: it lives in the
        // sandbox's pid namespace, which dies with the sandbox's init, and so with the server.
        "--cap-drop",
        "ALL",
        "--bind",
        this.#root(id),
        "/",
        "--proc",
        "/proc",
        ...procHardening(),
        "--dev",
        "/dev",
        ...spec.mounts.flatMap((m) => ["--bind", this.#opts.volumePath(m.volumeId), m.mountPath]),
        "--clearenv",
        ...Object.entries(env).flatMap(([k, v]) => ["--setenv", k, v]),
        "--chdir",
        request.cwd,
        "--",
        request.shell,
        "-c",
        request.command,
      ],
      { detached: true, stdio: ["pipe", "pipe", "pipe", pidns], env: this.#limitEnv(spec) },
    );
    closeSync(pidns);
    const exited = new Promise<number>((resolve) => {
      child.once("error", () => resolve(127));
      child.once("exit", (code, signal) => resolve(code ?? 128 + (SIGNALS[signal ?? ""] ?? 0)));
    });
    // A write to a command that has exited must not crash the server.
    child.stdin!.on("error", () => {});
    return {
      stdout: child.stdout!,
      stderr: child.stderr!,
      stdin: child.stdin!,
      exited,
      kill() {
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          // already gone
        }
      },
    };
  }

  async stop(id: string): Promise<void> {
    await this.#booting.get(id)?.catch(() => {});
    await this.#halt(id);
  }

  async #halt(id: string): Promise<void> {
    const running = this.#running.get(id);
    if (running) {
      running.stopping = true;
      // The holder's death kills pid 1 (--die-with-parent), and pid 1's death the whole pid namespace.
      running.init.kill("SIGKILL");
      await running.exited;
      this.#running.delete(id);
    }
    await this.#cgroups?.remove(id);
  }

  async remove(id: string): Promise<void> {
    await this.stop(id);
    await rm(this.#dir(id), { recursive: true, force: true });
  }

  async close(): Promise<void> {
    await Promise.all([...this.#running.keys()].map((id) => this.stop(id).catch(() => {})));
    await this.#cgroups?.removeScope();
  }
}

/** Whether anything is at `p`, a dangling or foreign symlink included (not followed). */
function lexists(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

/** bwrap writes `{"child-pid": N, ...}` to its info fd once the namespaces exist. */
function readChildPid(init: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    const info = init.stdio[3] as NodeJS.ReadableStream;
    let text = "";
    const onExit = () => reject(new Error("exited"));
    info.setEncoding("utf8");
    info.on("data", (chunk: string) => {
      text += chunk;
      const match = /"child-pid":\s*(\d+)/.exec(text);
      if (match) {
        init.off("exit", onExit);
        resolve(Number(match[1]));
      }
    });
    init.once("exit", onExit);
  });
}

async function onPath(tool: string): Promise<boolean> {
  for (const dir of (process.env.PATH ?? DEFAULT_PATH).split(":")) {
    try {
      await access(path.join(dir, tool));
      return true;
    } catch {}
  }
  return false;
}

/** The sandboxes (running or stopped) under `stateDir` by the imported image content their files come from. */
export async function sandboxesByImage(stateDir: string): Promise<Map<string, string[]>> {
  const byDigest = new Map<string, string[]>();
  for (const id of await readdir(stateDir).catch(() => [] as string[])) {
    const digest = await readFile(path.join(stateDir, id, IMAGE_DIGEST_FILE), "utf8").catch(() => "");
    if (digest) byDigest.set(digest, [...(byDigest.get(digest) ?? []), id]);
  }
  return byDigest;
}
