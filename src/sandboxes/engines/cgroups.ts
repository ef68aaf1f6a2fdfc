/**
 * Resource limits of a sandbox through cgroups: one group per sandbox, which every process of the
 * sandbox joins (its init and each command, before they enter the sandbox). A server's groups live
 * under `hangar/<scope>`, the scope named after its sandbox state directory: servers with other data
 * directories on the same machine never touch them, not even when they clear groups a crash left.
 *
 * - cgroup v1 (this project's reference machine): `/sys/fs/cgroup/{memory,pids,cpu}/hangar/<scope>/<id>`
 *   with `memory.limit_in_bytes` (and `memory.memsw.limit_in_bytes` when swap accounting exists),
 *   `pids.max`, and `cpu.cfs_quota_us` over a 100 ms period; the freezer's group and, on a hybrid
 *   machine, the unified hierarchy's too (to end every process at once: see `kill`).
 * - cgroup v2 (unified): `/sys/fs/cgroup/hangar/<scope>/<id>` with `memory.max`, `pids.max`, `cpu.max`.
 *
 * An OCI runtime (runc, runsc) makes the group itself, on every hierarchy the machine mounts; removal
 * ends every process left in it and removes it on each of them.
 *
 * `detectCgroups()` returns null when neither is writable (not root, or no controllers); the driver then
 * falls back to an address-space rlimit (see host-driver.ts).
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { appendFile, mkdir, readdir, readFile, rmdir, writeFile } from "node:fs/promises";
import path from "node:path";

const ROOT = "/sys/fs/cgroup";
const GROUP = "hangar";
const CPU_PERIOD_US = 100_000;

export interface SandboxLimits {
  memoryBytes: number;
  cpuMillicores: number;
  pids: number;
}

export interface Cgroups {
  readonly version: 1 | 2;
  /** The sandbox's group, as an OCI runtime's `cgroupsPath` names it (the same under every controller). */
  pathOf(id: string): string;
  /** Creates the sandbox's group with its limits; returns the `cgroup.procs` files a process must join. */
  create(id: string, limits: SandboxLimits): Promise<string[]>;
  /** Ends every process in the sandbox's group; true once none is left (false: some outlived the deadline). */
  kill(id: string): Promise<boolean>;
  /**
   * Removes the sandbox's group on every hierarchy, ending what still runs in it first. Idempotent;
   * throws only when a group outlives the deadline.
   */
  remove(id: string): Promise<void>;
  /** Ends and removes this scope's groups of sandboxes that no longer run (left by a crash). */
  removeStale(keep: Set<string>): Promise<void>;
  /** Removes the scope's own group, once it holds no sandbox's. */
  removeScope(): Promise<void>;
}

/** The groups of the server whose sandboxes live in `stateDir`; null when cgroups cannot be used. */
export function detectCgroups(stateDir: string): Cgroups | null {
  if (process.getuid?.() !== 0) return null;
  const scope = path.join(
    GROUP,
    createHash("sha256").update(path.resolve(stateDir)).digest("hex").slice(0, 16),
  );
  if (existsSync(path.join(ROOT, "cgroup.controllers"))) return new CgroupsV2(scope);
  const v1 = ["memory", "pids", "cpu"].every((c) => existsSync(path.join(ROOT, c, "cgroup.procs")));
  return v1 ? new CgroupsV1(scope) : null;
}

/** How long a kill of a sandbox's group may take before its removal gives up. */
const KILL_DEADLINE_MS = 10_000;

/**
 * The cgroup hierarchies this machine mounts (/proc/self/mountinfo): v1 one per controller (and named
 * ones such as systemd's), v2 the unified one; both on a hybrid machine. An OCI runtime makes the
 * sandbox's group on each of them, so each is cleared.
 */
function mountedHierarchies(): { dir: string; v2: boolean }[] {
  let info: string;
  try {
    info = readFileSync("/proc/self/mountinfo", "utf8");
  } catch {
    return [];
  }
  const found: { dir: string; v2: boolean }[] = [];
  for (const line of info.split("\n")) {
    const [mountFields, fsFields] = line.split(" - ");
    const type = fsFields?.split(" ")[0];
    if (type !== "cgroup" && type !== "cgroup2") continue;
    // Octal escapes (\040 for a space) as mountinfo writes them.
    const dir = mountFields!
      .split(" ")[4]!
      .replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
    found.push({ dir, v2: type === "cgroup2" });
  }
  return found;
}

async function listGroups(dir: string): Promise<string[]> {
  return readdir(dir, { withFileTypes: true }).then(
    (entries) => entries.filter((e) => e.isDirectory()).map((e) => e.name),
    () => [],
  );
}

/** `dir` and the groups below it, deepest first. */
async function withSubgroups(dir: string): Promise<string[]> {
  const below = await Promise.all((await listGroups(dir)).map((name) => withSubgroups(path.join(dir, name))));
  return [...below.flat(), dir];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sends SIGKILL to a process (a test passes its own to watch the order of freezing and killing). */
export type Signaller = (pid: number) => void;
const sigkill: Signaller = (pid) => process.kill(pid, "SIGKILL");

/**
 * What both versions share: a sandbox's group is `<scope>/<id>` on every hierarchy, and ending it ends
 * every process in it. A kill uses the kernel's own where it has one (cgroup v2's `cgroup.kill`, which
 * no fork outruns); then, in rounds until no process is left, it freezes the group (v1's freezer, v2's
 * `cgroup.freeze`), reads its pids, sends each SIGKILL and thaws it. Frozen, no process of the group
 * exits or forks between the read and the kill, so a pid read is still that process's and never a
 * recycled one of the host's (the kill runs as root). A killed process forks no more, so the rounds end
 * (a fork bomb is bounded by the group's pids limit).
 */
abstract class SandboxGroups implements Cgroups {
  abstract readonly version: 1 | 2;

  constructor(
    readonly scope: string,
    readonly hierarchies: { dir: string; v2: boolean }[] = mountedHierarchies(),
    private readonly signal: Signaller = sigkill,
  ) {}

  abstract create(id: string, limits: SandboxLimits): Promise<string[]>;

  pathOf(id: string): string {
    return `/${this.scope}/${id}`;
  }

  /** The sandbox's group on each hierarchy that has one. */
  protected groupsOf(id: string): { dir: string; v2: boolean }[] {
    return this.hierarchies
      .map((h) => ({ dir: path.join(h.dir, this.scope, id), v2: h.v2 }))
      .filter((g) => existsSync(g.dir));
  }

  /** The hierarchy mounted at `dir` (v1: named after its controller), if this machine has it. */
  protected hierarchy(dir: string): string | undefined {
    return this.hierarchies.find((h) => h.dir === dir)?.dir;
  }

  async kill(id: string): Promise<boolean> {
    const groups = this.groupsOf(id);
    // v2's kill file (kernel 5.14 or later).
    const killFile = groups.map((g) => path.join(g.dir, "cgroup.kill")).find((f) => existsSync(f));
    if (killFile) await writeFile(killFile, "1").catch(() => {});
    const freezers = groups.map(freezerOf).filter((f): f is Freezer => f !== undefined);
    const deadline = Date.now() + KILL_DEADLINE_MS;
    for (let round = 0; ; round++) {
      const frozen: Freezer[] = [];
      for (const f of freezers) if (await freeze(f, deadline)) frozen.push(f);
      const pids = new Set<number>();
      for (const dir of (await Promise.all(groups.map((g) => withSubgroups(g.dir)))).flat()) {
        const procs = await readFile(path.join(dir, "cgroup.procs"), "utf8").catch(() => "");
        for (const pid of procs.split("\n").filter(Boolean)) pids.add(Number(pid));
      }
      for (const pid of pids) {
        try {
          this.signal(pid);
        } catch {} // exited meanwhile
      }
      for (const f of frozen) await writeFile(f.file, f.thawed).catch(() => {});
      if (pids.size === 0) return true;
      if (Date.now() > deadline) return false;
      await sleep(round < 10 ? 5 : 20);
    }
  }

  async remove(id: string): Promise<void> {
    const emptied = await this.kill(id);
    const deadline = Date.now() + KILL_DEADLINE_MS;
    // Deepest first: a runtime may make groups of its own inside the sandbox's.
    const dirs = (await Promise.all(this.groupsOf(id).map((g) => withSubgroups(g.dir)))).flat();
    for (const dir of dirs) {
      for (;;) {
        try {
          await rmdir(dir);
          break;
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code === "ENOENT") break;
          // EBUSY while the last killed processes are reaped.
          if (code !== "EBUSY" || Date.now() > deadline) {
            throw new Error(
              `could not remove the sandbox's cgroup ${dir}${emptied ? "" : " (its processes did not all die)"}: ${code}`,
            );
          }
          await this.kill(id);
          await sleep(20);
        }
      }
    }
  }

  async removeStale(keep: Set<string>): Promise<void> {
    const ids = new Set<string>();
    for (const h of this.hierarchies) {
      for (const id of await listGroups(path.join(h.dir, this.scope))) ids.add(id);
    }
    for (const id of ids) if (!keep.has(id)) await this.remove(id).catch(() => {});
  }

  async removeScope(): Promise<void> {
    // `hangar` itself stays: another server may be making its scope there right now.
    for (const h of this.hierarchies) await rmdir(path.join(h.dir, this.scope)).catch(() => {});
  }
}

/** A group's freezer: v1's `freezer.state`, v2's `cgroup.freeze` (kernel 5.2 or later). */
interface Freezer {
  file: string;
  frozen: string;
  thawed: string;
  /** The file that says when the whole group is frozen, and what it then holds. */
  state: string;
  isFrozen: (text: string) => boolean;
}

function freezerOf(group: { dir: string; v2: boolean }): Freezer | undefined {
  if (group.v2) {
    const file = path.join(group.dir, "cgroup.freeze");
    if (!existsSync(file)) return undefined;
    const state = path.join(group.dir, "cgroup.events");
    return { file, frozen: "1", thawed: "0", state, isFrozen: (t) => /^frozen 1$/m.test(t) };
  }
  const file = path.join(group.dir, "freezer.state");
  if (!existsSync(file)) return undefined;
  return { file, frozen: "FROZEN", thawed: "THAWED", state: file, isFrozen: (t) => t.trim() === "FROZEN" };
}

/** Freezes a group; true once the freeze was asked (it is thawed after), whether or not it settled. */
async function freeze(f: Freezer, deadline: number): Promise<boolean> {
  if (
    !(await writeFile(f.file, f.frozen).then(
      () => true,
      () => false,
    ))
  )
    return false;
  const until = Math.min(deadline, Date.now() + 1000);
  while (Date.now() < until) {
    if (f.isFrozen(await readFile(f.state, "utf8").catch(() => ""))) return true;
    await sleep(5);
  }
  return true; // what froze is killed once thawed; the rounds catch the rest
}

/** The groups of `scope` on these hierarchies, killing through `signal` (for tests of `kill`). */
export function cgroupsOn(
  version: 1 | 2,
  scope: string,
  hierarchies: { dir: string; v2: boolean }[],
  signal: Signaller,
): Cgroups {
  return version === 1
    ? new CgroupsV1(scope, hierarchies, signal)
    : new CgroupsV2(scope, hierarchies, signal);
}

class CgroupsV1 extends SandboxGroups {
  readonly version = 1 as const;
  /** The controllers limits are set on. */
  readonly #limited = ["memory", "pids", "cpu"] as const;

  /**
   * Beyond the limited controllers, a sandbox's processes join its freezer group and, on a hybrid
   * machine, its group on the unified hierarchy (whose `cgroup.kill` ends them at once).
   */
  #joined(): string[] {
    const extra = [path.join(ROOT, "freezer"), path.join(ROOT, "unified")].filter((d) => this.hierarchy(d));
    return [...this.#limited.map((c) => path.join(ROOT, c)), ...extra];
  }

  #dir(controller: string, id: string) {
    return path.join(ROOT, controller, this.scope, id);
  }

  async create(id: string, limits: SandboxLimits): Promise<string[]> {
    const groups = this.#joined().map((h) => path.join(h, this.scope, id));
    for (const dir of groups) await mkdir(dir, { recursive: true });
    const memory = this.#dir("memory", id);
    await writeFile(path.join(memory, "memory.limit_in_bytes"), String(limits.memoryBytes));
    // Without this, a sandbox could swap past its memory limit.
    const memsw = path.join(memory, "memory.memsw.limit_in_bytes");
    if (existsSync(memsw)) await writeFile(memsw, String(limits.memoryBytes));
    await writeFile(path.join(this.#dir("pids", id), "pids.max"), String(limits.pids));
    const cpu = this.#dir("cpu", id);
    await writeFile(path.join(cpu, "cpu.cfs_period_us"), String(CPU_PERIOD_US));
    await writeFile(path.join(cpu, "cpu.cfs_quota_us"), String(Math.max(1000, limits.cpuMillicores * 100)));
    return groups.map((dir) => path.join(dir, "cgroup.procs"));
  }
}

class CgroupsV2 extends SandboxGroups {
  readonly version = 2 as const;

  async create(id: string, limits: SandboxLimits): Promise<string[]> {
    await mkdir(path.join(ROOT, this.scope), { recursive: true });
    // Controllers must be enabled in every ancestor's subtree_control to be usable below.
    const enabled = (await readFile(path.join(ROOT, "cgroup.subtree_control"), "utf8")).split(/\s+/);
    for (const c of ["memory", "pids", "cpu"].filter((c) => !enabled.includes(c))) {
      await appendFile(path.join(ROOT, "cgroup.subtree_control"), `+${c}`).catch(() => {});
    }
    for (const parent of [GROUP, this.scope]) {
      await writeFile(path.join(ROOT, parent, "cgroup.subtree_control"), "+memory +pids +cpu").catch(
        () => {},
      );
    }
    const dir = path.join(ROOT, this.scope, id);
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, "memory.max"), String(limits.memoryBytes));
    await writeFile(path.join(dir, "memory.swap.max"), "0").catch(() => {});
    await writeFile(path.join(dir, "pids.max"), String(limits.pids));
    await writeFile(
      path.join(dir, "cpu.max"),
      `${Math.max(1000, limits.cpuMillicores * 100)} ${CPU_PERIOD_US}`,
    );
    return [path.join(dir, "cgroup.procs")];
  }
}
