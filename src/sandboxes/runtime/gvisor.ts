/**
 * The gVisor engine (`runsc`, Debian package runsc): the sandbox's processes run on gVisor's
 * user-space kernel, not on the host's. The host sees only gVisor's own processes: the sandbox
 * ("sentry", which serves the system calls) runs as an unprivileged uid (nobody) in a user namespace of
 * its own under a seccomp filter, and a gofer serves the files. Root inside is gVisor's root, not the
 * host's; with `--network=none` the sandbox has a loopback interface and nothing else.
 *
 * The init (after host-driver.ts's holder mounted the overlays, so the gofer serves the merged root):
 * `runsc run` of a bundle written per boot, whose process is tini (Debian's tini-static, bound
 * read-only at /dev/.hangar-init, so nothing is written to the sandbox's files) reaping orphans as pid 1
 * over `sh -c 'read _'`. `runsc run` runs the sandbox attached: its death (the server's SIGKILL on
 * stop) kills the sandbox; the server's death closes the read, which ends the sandbox the same way.
 *
 * Each command is `runsc exec`, its own session and process group inside; a kill ends the `runsc exec`
 * client and sends SIGKILL to that process group from inside the sandbox.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import type { ExecProcess, ExecRequest, SandboxSpec } from "../provisioner.js";
import {
  DEFAULT_PATH,
  HostSandboxDriver,
  killGroup,
  onPath,
  type Running,
  spawnedCommand,
} from "./host-driver.js";

/** Docker's default capabilities: what root in a container is expected to be able to do. */
const CAPABILITIES = [
  "CAP_CHOWN",
  "CAP_DAC_OVERRIDE",
  "CAP_FSETID",
  "CAP_FOWNER",
  "CAP_MKNOD",
  "CAP_NET_RAW",
  "CAP_SETGID",
  "CAP_SETUID",
  "CAP_SETFCAP",
  "CAP_SETPCAP",
  "CAP_NET_BIND_SERVICE",
  "CAP_SYS_CHROOT",
  "CAP_KILL",
  "CAP_AUDIT_WRITE",
];
const INIT_PATH = "/dev/.hangar-init";
/**
 * gVisor releases before this refuse the statx flags glibc's ls and stat pass (EINVAL): a Debian or
 * Ubuntu userland does not work on them. Debian 12's own runsc is 20221219; bookworm-backports has 2024's.
 */
const OLDEST_RELEASE = "20230101";

export class GvisorDriver extends HostSandboxDriver {
  readonly engine = "runsc";
  protected readonly tools = { names: ["runsc", "unshare", "mount", "tini-static"], packages: "runsc tini" };
  /** `runsc run` gives no sign once the container runs: the first probe may come too early. */
  protected override readonly probeRetries = 300;

  #release: Promise<string | null> | null = null;

  override async unavailable(): Promise<string | null> {
    const problem = await super.unavailable();
    if (problem) return problem;
    this.#release ??= runscRelease();
    const release = await this.#release;
    if (release !== null && release < OLDEST_RELEASE) {
      return `runsc ${release} is too old: gVisor releases before ${OLDEST_RELEASE} refuse the statx flags glibc passes (ls and stat fail in the sandbox). Install a newer one (Debian 12: apt-get install -t bookworm-backports runsc) or set HANGAR_SANDBOX_ENGINE=bwrap`;
    }
    return null;
  }

  /** runsc's state (one entry per running sandbox), kept beside the sandboxes' own. */
  get #runscRoot(): string {
    return path.join(this.opts.stateDir, ".runsc");
  }

  #runsc(...args: string[]): string[] {
    return ["runsc", `--root=${this.#runscRoot}`, ...args];
  }

  /** Writes the sandbox's OCI bundle (the same on every boot) and runs it. */
  protected override readonly enginePlacesCgroups = true;

  protected async initCommand(
    spec: SandboxSpec,
    { root, cgroupsPath }: { root: string; cgroupsPath?: string },
  ): Promise<{ argv: string[]; fds: number }> {
    const bundle = path.join(this.dir(spec.id), "bundle");
    await mkdir(bundle, { recursive: true });
    const config = {
      ociVersion: "1.0.2",
      process: {
        terminal: false,
        user: { uid: 0, gid: 0 },
        args: [INIT_PATH, "--", "/bin/sh", "-c", "read _"],
        env: [`PATH=${DEFAULT_PATH}`],
        cwd: "/",
        capabilities: Object.fromEntries(
          ["bounding", "effective", "permitted"].map((set) => [set, CAPABILITIES]),
        ),
        noNewPrivileges: true,
      },
      root: { path: root, readonly: false },
      hostname: spec.hostname,
      mounts: [
        { destination: "/proc", type: "proc", source: "proc" },
        { destination: "/dev", type: "tmpfs", source: "tmpfs", options: ["nosuid", "mode=755"] },
        { destination: "/dev/pts", type: "devpts", source: "devpts", options: ["nosuid", "noexec"] },
        { destination: "/dev/shm", type: "tmpfs", source: "shm", options: ["nosuid", "noexec", "nodev"] },
        { destination: "/sys", type: "sysfs", source: "sysfs", options: ["nosuid", "noexec", "nodev", "ro"] },
        { destination: INIT_PATH, type: "bind", source: onPath("tini-static"), options: ["rbind", "ro"] },
        ...spec.mounts.map((m) => ({
          destination: m.mountPath,
          type: "bind",
          source: this.opts.volumePath(m.volumeId),
          options: ["rbind", "rw"],
        })),
      ],
      linux: {
        namespaces: ["pid", "network", "ipc", "uts", "mount"].map((type) => ({ type })),
        // runsc puts its own processes in these groups, and shows the sandbox the memory limit as its
        // whole memory: gVisor's processes, gVisor's own memory included, fit in the template's.
        ...(cgroupsPath && {
          cgroupsPath,
          resources: {
            memory: { limit: spec.memoryBytes, swap: spec.memoryBytes },
            cpu: { quota: Math.max(1000, spec.cpuMillicores * 100), period: 100_000 },
            pids: { limit: this.opts.pidsMax },
          },
        }),
      },
    };
    await writeFile(path.join(bundle, "config.json"), JSON.stringify(config));
    const cgroups = cgroupsPath ? [] : ["--ignore-cgroups"];
    // --overlay2=none: writes go through to the sandbox's own layer on the host (kept across restarts,
    // limited by its storage), not to an overlay in gVisor's memory. --directfs=false: the gofer alone
    // opens host files, so the sandbox process (where the sandbox's code runs) is nobody without
    // capabilities; with directfs it would be host root with a few capabilities.
    const flags = ["--network=none", "--overlay2=none", "--directfs=false", ...cgroups];
    const argv = this.#runsc(...flags, "run", "--bundle", bundle, spec.id);
    return { argv, fds: 0 };
  }

  /** runsc gives no sign once the container runs: the probe that follows tries again until it does. */
  protected async started(init: ChildProcess): Promise<null> {
    init.stdout!.resume(); // the init says nothing there
    if (init.exitCode !== null || init.signalCode !== null) throw new Error("exited");
    return null;
  }

  protected command(running: Running, request: ExecRequest, env: Record<string, string>): ExecProcess {
    const id = running.spec.id;
    const pidFile = path.join(this.dir(id), "bundle", `exec-${randomUUID()}.pid`);
    const argv = this.#runsc(
      "exec",
      ...Object.entries(env).flatMap(([k, v]) => ["--env", `${k}=${v}`]),
      "--internal-pid-file",
      pidFile,
      id,
      // The image's sh changes directory (runsc's --cwd fails a missing one with 128 and no message),
      // so a command fails the same way on every engine: exit 1, the shell saying why.
      "/bin/sh",
      "-c",
      'cd -- "$1" || exit 1; shift; exec "$@"',
      "sh",
      request.cwd,
      request.shell,
      "-c",
      request.command,
    );
    const child = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: ["pipe", "pipe", "pipe"] });
    return spawnedCommand(
      child,
      () => {
        killGroup(child);
        let pid: number;
        try {
          pid = Number(readFileSync(pidFile, "utf8"));
        } catch {
          return; // not started inside
        }
        if (!Number.isInteger(pid) || pid <= 1) return;
        // Each `runsc exec` leads a process group of its own inside: the command and what it started.
        const killer = this.#runsc("exec", id, "/bin/sh", "-c", `kill -9 -${pid} ${pid}`);
        spawn(killer[0]!, killer.slice(1), { stdio: "ignore", timeout: 10_000 }).on("error", () => {});
      },
      () => rmSync(pidFile, { force: true }),
    );
  }

  /** `runsc run` was killed: its state entry stays until deleted. */
  protected override async afterHalt(id: string, _handle: unknown): Promise<void> {
    const argv = this.#runsc("delete", "--force", id);
    await new Promise<void>((resolve) => {
      spawn(argv[0]!, argv.slice(1), { stdio: "ignore" })
        .once("exit", () => resolve())
        .once("error", () => resolve());
    });
  }

  /** A crashed server's sandboxes died with it (their read ended); their runsc state did not. */
  protected override async cleanStale(): Promise<void> {
    await rm(this.#runscRoot, { recursive: true, force: true });
  }
}

/** The release date (YYYYMMDD) `runsc --version` names, or null when it names none. */
async function runscRelease(): Promise<string | null> {
  const { stdout } = await promisify(execFile)("runsc", ["--version"]).catch(() => ({ stdout: "" }));
  return /20\d{6}/.exec(stdout)?.[0] ?? null;
}
