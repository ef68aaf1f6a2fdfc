/**
 * What the engines that are OCI runtimes share (gvisor.ts: `runsc`; runc.ts: `runc`; both speak the
 * runc command line): the sandbox is a container run from an OCI bundle written per boot. How a
 * command enters it, each engine says (runsc: `runsc exec`; runc: the starter).
 *
 * The init (after host-driver.ts's holder mounted the overlays, so the runtime sees the merged root):
 * `<runtime> run` of the bundle, attached, whose process is tini (Debian's tini-static, bound read-only
 * at /dev/.hangar-init, so nothing is written to the sandbox's files) reaping orphans as pid 1 over
 * `sh -c 'read _'` (runc: the starter, which reads the same pipe). The runtime's death (the server's
 * SIGKILL on stop) ends the container; the server's death closes the read, which ends it the same way.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import type { SandboxSpec } from "../provisioner.js";
import { DEFAULT_PATH, HostSandboxDriver, onPath } from "./host-driver.js";

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
/** The namespaces every sandbox of an OCI runtime has (an engine may add to them). */
export const NAMESPACES = ["pid", "network", "ipc", "uts", "mount"];

export abstract class OciRuntimeDriver extends HostSandboxDriver {
  /** The runtime's program. */
  protected abstract readonly runtime: string;
  /** The runtime's global flags for `run`. */
  protected abstract runFlags(cgroupsPath: string | undefined): string[];
  /** Flags of the `run` command itself. */
  protected runOptions(_spec: SandboxSpec): string[] {
    return [];
  }
  /** What the init (tini) runs: by default a read of the server's pipe, which holds the sandbox up. */
  protected initProcess(): string[] {
    return ["/bin/sh", "-c", "read _"];
  }
  /** Host directories bound into the sandbox beside its volumes. */
  protected extraBinds(_spec: SandboxSpec): { source: string; destination: string; readonly: boolean }[] {
    return [];
  }
  /** The engine's part of the bundle's `linux` section (namespaces beyond the usual, mappings, seccomp). */
  protected abstract linuxConfig(): Record<string, unknown>;

  protected override readonly enginePlacesCgroups = true;

  /**
   * Where the runtime finds the sandbox's root and volumes (by default where they are), and the init's
   * argv as it must run for that (by default as it is).
   */
  protected visiblePaths(root: string, sources: string[]) {
    return { root, sources, init: (argv: string[]) => argv };
  }

  /** The runtime's state (one entry per running sandbox), kept beside the sandboxes' own. */
  protected get stateRoot(): string {
    return path.join(this.opts.stateDir, `.${this.runtime}`);
  }

  protected runtimeArgv(...args: string[]): string[] {
    return [this.runtime, `--root=${this.stateRoot}`, ...args];
  }

  /** Writes the sandbox's OCI bundle (the same on every boot) and runs it. */
  protected async initCommand(
    spec: SandboxSpec,
    { root, cgroupsPath }: { root: string; cgroupsPath?: string },
  ): Promise<{ argv: string[]; fds: number }> {
    const bundle = path.join(this.dir(spec.id), "bundle");
    await mkdir(bundle, { recursive: true });
    const binds = [
      ...spec.mounts.map((m) => ({
        source: this.opts.volumePath(m.volumeId),
        destination: m.mountPath,
        readonly: false,
      })),
      ...this.extraBinds(spec),
    ];
    const seen = this.visiblePaths(
      root,
      binds.map((b) => b.source),
    );
    const config = {
      ociVersion: "1.0.2",
      process: {
        terminal: false,
        user: { uid: 0, gid: 0 },
        args: [INIT_PATH, "--", ...this.initProcess()],
        env: [`PATH=${DEFAULT_PATH}`],
        cwd: "/",
        capabilities: Object.fromEntries(
          ["bounding", "effective", "permitted"].map((set) => [set, CAPABILITIES]),
        ),
        noNewPrivileges: true,
      },
      root: { path: seen.root, readonly: false },
      hostname: spec.hostname,
      mounts: [
        { destination: "/proc", type: "proc", source: "proc" },
        { destination: "/dev", type: "tmpfs", source: "tmpfs", options: ["nosuid", "mode=755"] },
        { destination: "/dev/pts", type: "devpts", source: "devpts", options: ["nosuid", "noexec"] },
        { destination: "/dev/shm", type: "tmpfs", source: "shm", options: ["nosuid", "noexec", "nodev"] },
        { destination: "/sys", type: "sysfs", source: "sysfs", options: ["nosuid", "noexec", "nodev", "ro"] },
        { destination: INIT_PATH, type: "bind", source: onPath("tini-static"), options: ["rbind", "ro"] },
        ...binds.map((b, i) => ({
          destination: b.destination,
          type: "bind",
          source: seen.sources[i],
          // nosuid,nodev as on the host (nosuid.ts): in runc's user namespace they are locked, and a
          // remount that dropped them would be refused.
          options: ["rbind", b.readonly ? "ro" : "rw", "nosuid", "nodev"],
        })),
      ],
      linux: {
        namespaces: NAMESPACES.map((type) => ({ type })),
        ...this.linuxConfig(),
        // The runtime puts its processes in these groups (runsc: its own too, and it shows the sandbox
        // the memory limit as its whole memory).
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
    const run = this.runtimeArgv(
      ...this.runFlags(cgroupsPath),
      "run",
      ...this.runOptions(spec),
      "--bundle",
      bundle,
      spec.id,
    );
    return { argv: seen.init(run), fds: 0 };
  }

  /** The runtime gives no sign once the container runs: the probe that follows tries again until it does. */
  protected override readonly probeRetries: number = 300;

  protected async started(init: ChildProcess, _spec: SandboxSpec): Promise<unknown> {
    init.stdout!.resume(); // the init says nothing there
    if (init.exitCode !== null || init.signalCode !== null) throw new Error("exited");
    return null;
  }

  /** The runtime was killed: its state entry stays until deleted. */
  protected override async afterHalt(id: string, _handle: unknown): Promise<void> {
    const argv = this.runtimeArgv("delete", "--force", id);
    await new Promise<void>((resolve) => {
      spawn(argv[0]!, argv.slice(1), { stdio: "ignore" })
        .once("exit", () => resolve())
        .once("error", () => resolve());
    });
  }

  /** A crashed server's sandboxes died with it (their read ended); their runtime state did not. */
  protected override async cleanStale(): Promise<void> {
    await rm(this.stateRoot, { recursive: true, force: true });
  }
}
