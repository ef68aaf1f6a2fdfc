/**
 * Resource limits of a sandbox through cgroups: one group per sandbox, which every process of the
 * sandbox joins (its init and each command, before they enter the sandbox). A server's groups live
 * under `hangar/<scope>`, the scope named after its sandbox state directory: servers with other data
 * directories on the same machine never touch them, not even when they clear groups a crash left.
 *
 * - cgroup v1 (this project's reference machine): `/sys/fs/cgroup/{memory,pids,cpu}/hangar/<scope>/<id>`
 *   with `memory.limit_in_bytes` (and `memory.memsw.limit_in_bytes` when swap accounting exists),
 *   `pids.max`, and `cpu.cfs_quota_us` over a 100 ms period.
 * - cgroup v2 (unified): `/sys/fs/cgroup/hangar/<scope>/<id>` with `memory.max`, `pids.max`, `cpu.max`.
 *
 * `detectCgroups()` returns null when neither is writable (not root, or no controllers); the driver then
 * falls back to an address-space rlimit (see host-driver.ts).
 */
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
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
  /** Removes the group (its processes must be gone). Idempotent. */
  remove(id: string): Promise<void>;
  /** Removes this scope's groups of sandboxes that no longer run (left by a crash). */
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

/** rmdir of a group can fail for a moment while its last processes are reaped. */
async function rmdirRetry(dir: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await rmdir(dir);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return;
      if (code !== "EBUSY" || attempt >= 50) throw err;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

async function listGroups(dir: string): Promise<string[]> {
  return readdir(dir, { withFileTypes: true }).then(
    (entries) => entries.filter((e) => e.isDirectory()).map((e) => e.name),
    () => [],
  );
}

class CgroupsV1 implements Cgroups {
  readonly version = 1 as const;
  readonly #controllers = ["memory", "pids", "cpu"] as const;

  constructor(readonly scope: string) {}

  pathOf(id: string): string {
    return `/${this.scope}/${id}`;
  }

  #dir(controller: string, id: string) {
    return path.join(ROOT, controller, this.scope, id);
  }

  async create(id: string, limits: SandboxLimits): Promise<string[]> {
    for (const c of this.#controllers) await mkdir(this.#dir(c, id), { recursive: true });
    const memory = this.#dir("memory", id);
    await writeFile(path.join(memory, "memory.limit_in_bytes"), String(limits.memoryBytes));
    // Without this, a sandbox could swap past its memory limit.
    const memsw = path.join(memory, "memory.memsw.limit_in_bytes");
    if (existsSync(memsw)) await writeFile(memsw, String(limits.memoryBytes));
    await writeFile(path.join(this.#dir("pids", id), "pids.max"), String(limits.pids));
    const cpu = this.#dir("cpu", id);
    await writeFile(path.join(cpu, "cpu.cfs_period_us"), String(CPU_PERIOD_US));
    await writeFile(path.join(cpu, "cpu.cfs_quota_us"), String(Math.max(1000, limits.cpuMillicores * 100)));
    return this.#controllers.map((c) => path.join(this.#dir(c, id), "cgroup.procs"));
  }

  async remove(id: string): Promise<void> {
    for (const c of this.#controllers) await rmdirRetry(this.#dir(c, id));
  }

  async removeStale(keep: Set<string>): Promise<void> {
    for (const c of this.#controllers) {
      for (const id of await listGroups(path.join(ROOT, c, this.scope))) {
        if (!keep.has(id)) await rmdirRetry(this.#dir(c, id)).catch(() => {});
      }
    }
  }

  async removeScope(): Promise<void> {
    for (const c of this.#controllers) await rmdir(path.join(ROOT, c, this.scope)).catch(() => {});
  }
}

class CgroupsV2 implements Cgroups {
  readonly version = 2 as const;

  constructor(readonly scope: string) {}

  pathOf(id: string): string {
    return `/${this.scope}/${id}`;
  }

  #dir(id: string) {
    return path.join(ROOT, this.scope, id);
  }

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
    const dir = this.#dir(id);
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

  async remove(id: string): Promise<void> {
    await rmdirRetry(this.#dir(id));
  }

  async removeStale(keep: Set<string>): Promise<void> {
    for (const id of await listGroups(path.join(ROOT, this.scope))) {
      if (!keep.has(id)) await rmdirRetry(this.#dir(id)).catch(() => {});
    }
  }

  async removeScope(): Promise<void> {
    await rmdir(path.join(ROOT, this.scope)).catch(() => {});
  }
}
