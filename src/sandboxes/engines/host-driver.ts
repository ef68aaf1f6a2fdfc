/**
 * What the sandbox drivers that run on this machine share, whatever engine isolates the processes
 * (bwrap.ts: bubblewrap; runc.ts: runc; gvisor.ts: gVisor's `runsc`). Needs root (overlay mounts, cgroups).
 *
 * A sandbox's init is one `spawn` of this shape:
 *
 *   sh (joins the sandbox's cgroups) → unshare --mount (a private mount namespace, the "holder") →
 *   sh (mounts the overlays: image layers read-only + this sandbox's writable upper dirs) →
 *   the engine's init, which reads its stdin until the server closes it
 *
 * The overlays exist only in the holder mount namespace, so nothing is mounted on the host and they
 * vanish with the sandbox. The init reads from a pipe the server holds: when the server dies, for any
 * reason, the read ends and the sandbox with it. The engine decides how a command enters the sandbox
 * and what a kill reaches.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync, lstatSync } from "node:fs";
import {
  chmod,
  lchown,
  mkdir,
  readdir,
  readFile,
  realpath,
  rename,
  rm,
  truncate,
  writeFile,
} from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { PRIVATE_DIR_MODE } from "../../storage/private-dir.js";
import type { ExecProcess, ExecRequest, SandboxDriver, SandboxSpec } from "../provisioner.js";
import { type Cgroups, detectCgroups } from "./cgroups.js";
import type { ImageLayer, ImageStore } from "./images.js";
import { ensureNosuid, releaseNosuid } from "./nosuid.js";

const execFileAsync = promisify(execFile);

/** Joins the cgroups listed before `--` (or sets an rlimit when there are none), then runs the rest. */
export const JOIN_CGROUPS = `while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift
[ -z "$HANGAR_AS_LIMIT_KB" ] || ulimit -v "$HANGAR_AS_LIMIT_KB"
exec "$@"`;
/**
 * Mounts the file system of the sandbox's own layers when it has one (`$1` on `$2`; both empty when
 * not), then the overlays given as (options, target) pairs before `--`, then runs the rest.
 */
const MOUNT_LAYERS = `set -e; [ -z "$1" ] || mount -o loop,nodev,nosuid "$1" "$2"; shift 2
while [ "$1" != -- ]; do mount -t overlay overlay -o "$1" "$2"; shift 2; done; shift
exec "$@"`;

export const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/** Directories every sandbox has, made in its own layer when its image lacks them: HOME, and /tmp. */
const EXPECTED_DIRS = [
  ["root", 0o700],
  ["tmp", 0o1777],
] as const;
/** In a sandbox's state directory: the manifest digest of the imported image it was booted from. */
export const IMAGE_DIGEST_FILE = "image-digest";
/**
 * In a sandbox's state directory, when its template limits `storage`: the ext4 file system holding its
 * own layers (sparse: it takes on disk what the sandbox wrote), mounted in the holder's mount
 * namespace at `layers/`. A full file system refuses the write (ENOSPC) and nothing else.
 */
const STORAGE_IMAGE = "storage.ext4";
/** How long the boot's probe command (`exit 0`) may take before the boot fails. */
const PROBE_TIMEOUT_MS = 30_000;
/** The smallest writable layer: an ext4 file system's own structures need room. */
const MIN_STORAGE_BYTES = 8 * 2 ** 20;

const SIGNALS: Record<string, number> = {
  SIGKILL: 9,
  SIGTERM: 15,
  SIGINT: 2,
  SIGHUP: 1,
  SIGSEGV: 11,
  SIGABRT: 6,
};

export interface HostDriverOptions {
  /** Per-sandbox state: `<stateDir>/<id>/` holds the writable layers (the sandbox's own files). */
  stateDir: string;
  images: ImageStore;
  /** The host directory backing a volume. */
  volumePath(volumeId: string): string;
  /** The directory every volume's is in (made a `nosuid,nodev` mount, as `stateDir` is: nosuid.ts). */
  volumesDir: string;
  /** Most processes a sandbox may have at once. */
  pidsMax: number;
  /** Told when a running sandbox's init exits without `stop` (it crashed or was killed). */
  onExit?: (id: string, reason: string) => void;
}

/** A running sandbox, as the engine needs it to run commands. */
export interface Running {
  spec: SandboxSpec;
  /** The image's environment, under each command's own. */
  env: Record<string, string>;
  init: ChildProcess;
  /** The `cgroup.procs` files a process joins to count as the sandbox's. */
  cgroupProcs: string[];
  /** The sandbox's merged root, as mounted in the holder's mount namespace. */
  root: string;
  /** The engine's own handle (bwrap: pid 1's host pid). */
  handle: unknown;
  /** Commands ran in it (its boot's probe passed): from then on, its init's exit is news. */
  ready: boolean;
  stopping: boolean;
  exited: Promise<void>;
}

export abstract class HostSandboxDriver implements SandboxDriver {
  /** The engine's name, as `/info` reports it. */
  abstract readonly engine: string;
  protected readonly opts: HostDriverOptions;
  readonly #cgroups: Cgroups | null;
  readonly #running = new Map<string, Running>();
  readonly #booting = new Map<string, Promise<void>>();
  #recovered: Promise<void> | null = null;
  #storageSecured: Promise<void> | null = null;
  /** The directories this server made `nosuid,nodev` mounts (unmounted at close). */
  readonly #mounted: string[] = [];

  constructor(opts: HostDriverOptions) {
    this.opts = opts;
    this.#cgroups = detectCgroups(opts.stateDir);
  }

  /** The tools the engine runs, and the Debian packages that have them. */
  protected abstract readonly tools: { names: string[]; packages: string };
  /**
   * The engine's init: what runs after the overlays are mounted, with how many pipes it needs beyond
   * stdio. `cgroupsPath` is set when the engine is to put the sandbox in its cgroups itself.
   */
  protected abstract initCommand(
    spec: SandboxSpec,
    at: { root: string; cgroupsPath?: string },
  ): { argv: string[]; fds: number } | Promise<{ argv: string[]; fds: number }>;
  /** The engine sets the sandbox's cgroups up itself, from the limits `initCommand` hands it. */
  protected readonly enginePlacesCgroups: boolean = false;
  /** Resolves with the engine's handle once the init runs; rejects when it exits first. */
  protected abstract started(init: ChildProcess, spec: SandboxSpec): Promise<unknown>;
  /** Starts `request` in the running sandbox, with the environment given. */
  protected abstract command(
    running: Running,
    request: ExecRequest,
    env: Record<string, string>,
  ): ExecProcess;
  /** After the init was killed: whatever the engine keeps of a sandbox beyond its processes. */
  protected async afterHalt(_id: string, _handle: unknown): Promise<void> {}
  /** Before the first boot: whatever a crashed server's engine left. */
  protected async cleanStale(): Promise<void> {}
  /** The host uid of root inside (a user namespace's mapped root): the sandbox's own layer belongs to it. */
  protected readonly rootUid: number = 0;
  /** The directories a layer's overlay is mounted over (an engine may need copies of its own). */
  protected async lowerDirs(layer: ImageLayer): Promise<string[]> {
    return layer.lower;
  }
  /** Before each boot's init, once the sandbox's layers are ready. */
  protected async beforeBoot(_spec: SandboxSpec): Promise<void> {}
  /** A probe that failed this early may mean the engine is not ready yet: it is tried again. */
  protected readonly probeRetries: number = 0;

  /** cgroup version used for limits, or null when only an address-space rlimit applies. */
  get cgroupVersion(): 1 | 2 | null {
    return this.#cgroups?.version ?? null;
  }

  async unavailable(): Promise<string | null> {
    if (process.platform !== "linux") return `the ${this.engine} sandbox driver needs Linux`;
    if (process.getuid?.() !== 0) {
      return `the ${this.engine} sandbox driver needs root (overlay mounts, cgroups and namespaces)`;
    }
    const missing = this.tools.names.filter((tool) => !onPath(tool));
    if (missing.length) {
      return `the ${this.engine} sandbox driver needs ${missing.join(", ")} on PATH (Debian: apt-get install ${this.tools.packages})`;
    }
    if (/[,:]/.test(this.opts.stateDir))
      return `the sandbox state directory must not contain ',' or ':': ${this.opts.stateDir}`;
    return null;
  }

  imageProblem(image: string): Promise<string | null> {
    return this.opts.images.problem(image);
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
    await this.recover();
    await this.#secureStorage();

    // A sandbox booted before keeps the image content its own layer was written over. The content it
    // uses is recorded under the store's lock, so a removal running meanwhile sees it in use.
    const digestFile = path.join(this.dir(spec.id), IMAGE_DIGEST_FILE);
    const image = await this.opts.images.withLock(async () => {
      const pinned = await readFile(digestFile, "utf8").catch(() => undefined);
      const resolved = await this.opts.images.resolve(spec.image, pinned);
      await mkdir(this.dir(spec.id), { recursive: true });
      await writeFile(digestFile, resolved.digest ?? "");
      return resolved;
    });
    const root = path.join(this.dir(spec.id), "root");
    const mountArgs = await this.#prepareLayers(spec, root, image.layers);
    const cgroupProcs =
      this.#cgroups && !this.enginePlacesCgroups
        ? await this.#cgroups.create(spec.id, {
            memoryBytes: spec.memoryBytes,
            cpuMillicores: spec.cpuMillicores,
            pids: this.opts.pidsMax,
          })
        : [];
    const cgroupsPath = this.enginePlacesCgroups ? this.#cgroups?.pathOf(spec.id) : undefined;
    await this.beforeBoot(spec);
    const engineInit = await this.initCommand(spec, { root, cgroupsPath });
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
        MOUNT_LAYERS,
        "hangar-sandbox",
        ...mountArgs,
        "--",
        ...engineInit.argv,
      ],
      {
        stdio: ["pipe", "pipe", "pipe", ...Array<"pipe">(engineInit.fds).fill("pipe")],
        env: this.limitEnv(spec),
      },
    );
    let stderr = "";
    init.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
      if (stderr.length < 4096) stderr += chunk;
    });
    const exited = new Promise<void>((resolve) => init.once("exit", () => resolve()));
    // What the init said before it exited, for the error (bounded: its pipe may be held by others).
    const stderrEnded = exited.then(
      () =>
        new Promise<void>((resolve) => {
          setTimeout(resolve, 100);
          init.stderr!.once("end", resolve);
        }),
    );
    let handle: unknown;
    try {
      handle = await this.started(init, spec);
    } catch {
      init.kill("SIGKILL");
      await stderrEnded;
      await this.afterHalt(spec.id, undefined).catch(() => {});
      await this.#cgroups?.remove(spec.id).catch(() => {});
      throw new Error(`the sandbox did not start: ${stderr.trim() || "its init exited"}`);
    }
    const running: Running = {
      spec,
      env: image.env,
      init,
      cgroupProcs,
      root,
      handle,
      ready: false,
      stopping: false,
      exited,
    };
    this.#running.set(spec.id, running);
    void exited.then(() => {
      if (this.#running.get(spec.id) !== running) return;
      this.#running.delete(spec.id);
      // An init that exits during its boot fails the boot, which says why.
      if (running.ready && !running.stopping) {
        this.opts.onExit?.(spec.id, stderr.trim() || "the sandbox's init exited");
      }
    });

    // Ready means a command runs: this checks the image's shell and the whole exec path once.
    for (let attempt = 0; ; attempt++) {
      const { code, stderr: probeErr } = this.#running.has(spec.id)
        ? await this.#probe(spec.id)
        : { code: null, stderr: "" };
      if (code === 0) {
        running.ready = true;
        return;
      }
      if (attempt < this.probeRetries && this.#running.has(spec.id)) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        continue;
      }
      await this.#halt(spec.id); // not stop(): that waits for this very boot
      await stderrEnded;
      // The init's own complaint (e.g. "execvp /bin/sh: No such file or directory") says more.
      const why = stderr.trim() || probeErr.trim() || (code === null ? "its init exited" : `exit ${code}`);
      throw new Error(`the sandbox cannot run commands: ${why}`);
    }
  }

  /**
   * At the server's start, and before the first boot if that comes first: what a server killed before
   * it could stop its sandboxes left — their groups, with every process still in them (a fork bomb
   * does not end when its pipe closes), and the engine's state.
   */
  recover(): Promise<void> {
    this.#recovered ??= (async () => {
      if (await this.unavailable()) return;
      await Promise.all([
        this.#cgroups?.removeStale(new Set()).catch(() => {}),
        this.cleanStale().catch(() => {}),
      ]);
    })();
    return this.#recovered;
  }

  /** Before the first boot: the directories sandboxes write to become `nosuid,nodev` mounts (nosuid.ts). */
  #secureStorage(): Promise<void> {
    this.#storageSecured ??= (async () => {
      for (const dir of [this.opts.stateDir, this.opts.volumesDir]) {
        await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
        const real = await realpath(dir);
        if (!this.#mounted.includes(real) && (await ensureNosuid(real))) this.#mounted.push(real);
      }
    })().catch((err) => {
      this.#storageSecured = null; // tried again by the next boot
      throw err;
    });
    return this.#storageSecured;
  }

  /** Runs `exit 0`; one that has not ended after PROBE_TIMEOUT_MS is killed and fails. */
  async #probe(id: string): Promise<{ code: number | null; stderr: string }> {
    const probe = this.exec(id, { shell: "/bin/sh", command: "exit 0", env: {}, cwd: "/" });
    let stderr = "";
    probe.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < 4096) stderr += chunk.toString("utf8");
    });
    probe.stdout.resume();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), PROBE_TIMEOUT_MS);
    });
    const code = await Promise.race([probe.exited, timedOut]);
    clearTimeout(timer);
    if (code === null) {
      probe.kill();
      return { code: null, stderr: `no command finished within ${PROBE_TIMEOUT_MS / 1000} s` };
    }
    return { code, stderr };
  }

  /**
   * Creates each layer's upper and work dirs; returns the arguments of MOUNT_LAYERS: the storage file
   * system and its mount point (or two empty strings), then the overlay (options, target) pairs. The
   * root layer gets the directories commands expect (HOME and a /tmp) in the sandbox's own layer when
   * the image has none (a minimal image may not).
   *
   * With a storage limit the layers are made in a staging directory on first boot, from which mkfs
   * builds the sandbox's file system; later boots find them there. A sandbox whose layers were made
   * without a limit (it booted before the template had one, or before Hangar enforced it) keeps them.
   */
  async #prepareLayers(spec: SandboxSpec, root: string, layers: ImageLayer[]): Promise<string[]> {
    const dir = this.dir(spec.id);
    await mkdir(root, { recursive: true });
    const image = path.join(dir, STORAGE_IMAGE);
    // Fixed at the first boot: a sandbox keeps the layers it has whatever its template says now.
    const limited = lexists(image) || (spec.storageBytes !== null && !lexists(path.join(dir, "layer-0")));
    const layersAt = limited ? path.join(dir, "layers") : dir;
    const staging = limited && !lexists(image) ? path.join(dir, "layers.new") : null;
    if (staging) await rm(staging, { recursive: true, force: true });
    const args: string[] = [];
    for (const [i, layer] of layers.entries()) {
      const made = path.join(staging ?? layersAt, `layer-${i}`);
      if (!limited || staging) {
        await mkdir(path.join(made, "upper"), { recursive: true });
        await mkdir(path.join(made, "work"), { recursive: true });
        await lchown(path.join(made, "upper"), this.rootUid, this.rootUid);
      }
      if (layer.at === "/" && (!limited || staging)) {
        for (const [name, mode] of EXPECTED_DIRS) {
          if (layer.lower.some((lower) => lexists(path.join(lower, name)))) continue;
          // Only where the sandbox's own layer has nothing: what it left there (a symlink to a host
          // path, say) must not be followed by the server.
          if (lexists(path.join(made, "upper", name))) continue;
          await mkdir(path.join(made, "upper", name));
          await chmod(path.join(made, "upper", name), mode);
          await lchown(path.join(made, "upper", name), this.rootUid, this.rootUid);
        }
      }
      const upper = path.join(layersAt, `layer-${i}`, "upper");
      const work = path.join(layersAt, `layer-${i}`, "work");
      const target = layer.at === "/" ? root : path.join(root, layer.at);
      // overlayfs separates lower dirs with ':'; one in a directory's name (python:3.12-slim) is escaped.
      const lower = (await this.lowerDirs(layer)).map((d) => d.replaceAll(":", "\\:")).join(":");
      args.push(`lowerdir=${lower},upperdir=${upper},workdir=${work}`, target);
    }
    if (!limited) return ["", "", ...args];
    if (staging) await makeFileSystem(image, Math.max(spec.storageBytes ?? 0, MIN_STORAGE_BYTES), staging);
    await mkdir(layersAt, { recursive: true });
    return [image, layersAt, ...args];
  }

  /** Without cgroups the memory limit becomes an address-space rlimit (coarser: it counts mappings). */
  protected limitEnv(spec: SandboxSpec): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? DEFAULT_PATH };
    if (!this.#cgroups) env.HANGAR_AS_LIMIT_KB = String(Math.ceil(spec.memoryBytes / 1024));
    return env;
  }

  protected dir(id: string): string {
    if (!/^[0-9a-f-]{36}$/i.test(id)) throw new Error(`not a sandbox id: ${id}`);
    return path.join(this.opts.stateDir, id);
  }

  exec(id: string, request: ExecRequest): ExecProcess {
    const running = this.#running.get(id);
    if (!running) throw new Error(`sandbox ${id} is not running`);
    const { spec, env: imageEnv } = running;
    const env = { PATH: DEFAULT_PATH, HOME: "/root", ...imageEnv, HOSTNAME: spec.hostname, ...request.env };
    return this.command(running, request, env);
  }

  async stop(id: string): Promise<void> {
    await this.#booting.get(id)?.catch(() => {});
    await this.#halt(id);
  }

  async #halt(id: string): Promise<void> {
    const running = this.#running.get(id);
    if (running) {
      running.stopping = true;
      // The engine's init dies with it (each engine says how), and every process of the sandbox with that
      // unless one outruns it (a fork bomb): the group's are all ended before the engine clears its state.
      running.init.kill("SIGKILL");
      await running.exited;
      this.#running.delete(id);
      await this.#cgroups?.kill(id);
      await this.afterHalt(id, running.handle);
    }
    await this.#cgroups?.remove(id);
  }

  async remove(id: string): Promise<void> {
    await this.stop(id);
    await rm(this.dir(id), { recursive: true, force: true, maxRetries: 3 });
  }

  async close(): Promise<void> {
    await Promise.all([...this.#running.keys()].map((id) => this.stop(id).catch(() => {})));
    await this.#cgroups?.removeScope();
    for (const dir of this.#mounted.splice(0)) await releaseNosuid(dir);
  }
}

/** A sparse file of `bytes` holding an ext4 file system with `from`'s contents (then removed). */
async function makeFileSystem(file: string, bytes: number, from: string): Promise<void> {
  const partial = `${file}.new`;
  await rm(partial, { force: true });
  await writeFile(partial, "");
  await truncate(partial, bytes);
  // No reserved blocks (the whole size is the sandbox's); no discard (a new sparse file has nothing to discard).
  const args = [
    "-q",
    "-F",
    "-m",
    "0",
    "-E",
    "nodiscard,lazy_itable_init=1,lazy_journal_init=1",
    "-d",
    from,
    partial,
  ];
  await execFileAsync("mkfs.ext4", args).catch((err: { stderr?: string; message: string }) => {
    throw new Error(
      `could not make the sandbox's file system (mkfs.ext4): ${(err.stderr || err.message).trim()}`,
    );
  });
  await rename(partial, file);
  await rm(from, { recursive: true, force: true });
}

/**
 * A command that is a host process (its spawn): its streams, its exit code (128 + n when killed by
 * signal n), `kill` as the engine kills what it started, `cleanUp` once it exited.
 */
export function spawnedCommand(child: ChildProcess, kill: () => void, cleanUp?: () => void): ExecProcess {
  const exited = new Promise<number>((resolve) => {
    child.once("error", () => resolve(127));
    child.once("exit", (code, signal) => resolve(code ?? 128 + (SIGNALS[signal ?? ""] ?? 0)));
  });
  if (cleanUp) void exited.then(cleanUp);
  // A write to a command that has exited must not crash the server.
  child.stdin!.on("error", () => {});
  return { stdout: child.stdout!, stderr: child.stderr!, stdin: child.stdin!, exited, kill };
}

/** Kills a detached command's whole process group (already gone: nothing to do). */
export function killGroup(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, "SIGKILL");
  } catch {
    // already gone
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

/** The absolute path of `tool` on PATH, or undefined. */
export function onPath(tool: string): string | undefined {
  for (const dir of (process.env.PATH ?? DEFAULT_PATH).split(":")) {
    if (existsSync(path.join(dir, tool))) return path.join(dir, tool);
  }
  return undefined;
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
