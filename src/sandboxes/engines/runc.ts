/**
 * The runc engine (Debian package runc), an OCI runtime (oci.ts) on the host's kernel, for machines
 * where gVisor does not run: Linux namespaces with a **user namespace** (root inside is the
 * unprivileged host uid ROOT_UID, every uid inside maps to ROOT_UID + uid), a seccomp filter denying
 * the system calls a container has no business making (DENIED_SYSCALLS), Docker's default capabilities
 * (meaningful only over the sandbox's own files), a network namespace with no interface, and the host
 * files that leak kernel information masked.
 *
 * Files must belong to the mapped uids for root inside to own them: an imported image's content is
 * copied once, its owners shifted up by ROOT_UID (`rootfs-uid<ROOT_UID>` beside the content, removed
 * with the image); the sandbox's own layer and its volumes' top directories are made the mapped root's.
 * The built-in image's skeleton is shifted too; a hand-laid image and the host's /usr and /etc are used
 * as they are: root inside reads them but cannot change them, as files of another user. (crun would do
 * the same; Debian 12's crun 1.8 refuses hybrid cgroup hierarchies, so runc it is.)
 *
 * Commands go through the starter (starter.ts), the init's child, not `runc exec` (a Go program's
 * start and a namespace join per command): runc relays the init's stdio, so the starter
 * reads ids and reports on the server's pipes; its io directory and FIFOs belong to the mapped root.
 * runc sees the sandbox's root and its binds under VISIBLE_AT (see `visiblePaths`).
 */
import { type ChildProcess, execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { chmod, lchown, lstat, mkdir, readdir, rename, rm } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import type { ExecProcess, ExecRequest, SandboxSpec } from "../provisioner.js";
import type { Running } from "./host-driver.js";
import type { ImageLayer } from "./images.js";
import { NAMESPACES, OciRuntimeDriver } from "./oci.js";
import { IO_IN_SANDBOX, killSandboxTree, STARTER, Starter, startCommand } from "./starter.js";

/** Where runc finds a sandbox's root and volumes, in the sandbox's holder mount namespace. */
const VISIBLE_AT = "/run/hangar-sandbox";
/** The host uid (and gid) of root inside; the sandbox's uids 0–65535 map to ROOT_UID + uid. */
export const ROOT_UID = 1_000_000_000;
const MAPPED = 65_536;

/**
 * What the seccomp filter refuses (EPERM): kernel modules and kexec, the kernel's keyring (not
 * namespaced), BPF and perf, new namespaces (no nesting), mounts, clock and swap settings, and other
 * calls Docker's default profile also refuses.
 */
const DENIED_SYSCALLS = [
  "acct",
  "add_key",
  "bpf",
  "clock_adjtime",
  "clock_settime",
  "delete_module",
  "finit_module",
  "fsconfig",
  "fsmount",
  "fsopen",
  "fspick",
  "init_module",
  "iopl",
  "ioperm",
  "kexec_file_load",
  "kexec_load",
  "keyctl",
  "lookup_dcookie",
  "mount",
  "mount_setattr",
  "move_mount",
  "name_to_handle_at",
  "open_by_handle_at",
  "open_tree",
  "perf_event_open",
  "pivot_root",
  "quotactl",
  "reboot",
  "request_key",
  "setns",
  "settimeofday",
  "swapoff",
  "swapon",
  "syslog",
  "umount2",
  "unshare",
  "userfaultfd",
];

const MASKED_PATHS = [
  "/proc/acpi",
  "/proc/kcore",
  "/proc/keys",
  "/proc/latency_stats",
  "/proc/sched_debug",
  "/proc/scsi",
  "/proc/timer_list",
  "/proc/timer_stats",
  "/sys/firmware",
];
const READ_ONLY_PATHS = [
  "/proc/asound",
  "/proc/bus",
  "/proc/fs",
  "/proc/irq",
  "/proc/sys",
  "/proc/sysrq-trigger",
];

export class RuncDriver extends OciRuntimeDriver {
  readonly engine = "runc";
  protected readonly runtime = "runc";
  protected readonly tools = { names: ["runc", "unshare", "mount", "tini-static"], packages: "runc tini" };
  protected override readonly rootUid = ROOT_UID;
  /** Shifted copies being made, by the content they copy. */
  readonly #shifting = new Map<string, Promise<string>>();

  /** runc writes its init's host pid there: the sandbox's pid namespace, for a kill (starter.ts). */
  #initPidFile(id: string): string {
    return path.join(this.dir(id), "bundle", "init.pid");
  }

  #ioDir(id: string): string {
    return path.join(this.dir(id), "io");
  }

  protected runFlags(): string[] {
    return [];
  }

  protected override runOptions(spec: SandboxSpec): string[] {
    return ["--pid-file", this.#initPidFile(spec.id)];
  }

  protected override initProcess(): string[] {
    return ["/bin/sh", "-c", STARTER];
  }

  protected override extraBinds(spec: SandboxSpec) {
    return [{ source: this.#ioDir(spec.id), destination: IO_IN_SANDBOX, readonly: true }];
  }

  /** The starter reads the server's pipe (runc relays the init's stdio): it is ready when the init is. */
  protected override async started(init: ChildProcess, spec: SandboxSpec): Promise<Starter> {
    if (init.exitCode !== null || init.signalCode !== null) throw new Error("exited");
    return new Starter(init, this.#ioDir(spec.id), ROOT_UID);
  }

  protected override command(
    running: Running,
    request: ExecRequest,
    env: Record<string, string>,
  ): ExecProcess {
    const pidFile = this.#initPidFile(running.spec.id);
    return startCommand(running.handle as Starter, request, env, (pid) => {
      const pid1 = Number(readFileSync(pidFile, "utf8"));
      if (Number.isInteger(pid1) && pid1 > 1) void killSandboxTree(pid1, pid, undefined);
    });
  }

  /** Its io directory is made by the server alone: nothing may be added once the sandbox's files go. */
  protected override async afterHalt(id: string, handle: unknown): Promise<void> {
    await (handle as Starter | undefined)?.stop();
    await super.afterHalt(id, handle);
  }

  protected linuxConfig(): Record<string, unknown> {
    const mappings = [{ containerID: 0, hostID: ROOT_UID, size: MAPPED }];
    return {
      namespaces: [...NAMESPACES, "user"].map((type) => ({ type })),
      uidMappings: mappings,
      gidMappings: mappings,
      seccomp: {
        defaultAction: "SCMP_ACT_ALLOW",
        syscalls: [{ names: DENIED_SYSCALLS, action: "SCMP_ACT_ERRNO", errnoRet: 1 }],
      },
      maskedPaths: MASKED_PATHS,
      readonlyPaths: READ_ONLY_PATHS,
    };
  }

  /**
   * An imported image's content, and the built-in image's skeleton (remade by each server), with their
   * owners shifted into the mapped range; other layers (a hand-laid image, the host's /usr) as they are.
   */
  protected override async lowerDirs(layer: ImageLayer): Promise<string[]> {
    const contents = path.join(this.opts.images.imagesDir, ".oci") + path.sep;
    const builtin = path.join(this.opts.images.stateDir, "builtin-image") + path.sep;
    return Promise.all(
      layer.lower.map((dir) =>
        dir.startsWith(contents) || dir.startsWith(builtin)
          ? this.#shifted(dir, dir.startsWith(builtin))
          : dir,
      ),
    );
  }

  #shifted(rootfs: string, remake: boolean): Promise<string> {
    let made = this.#shifting.get(rootfs);
    if (!made) {
      made = shiftedCopy(rootfs, `${rootfs}-uid${ROOT_UID}`, remake);
      made.catch(() => this.#shifting.delete(rootfs));
      this.#shifting.set(rootfs, made);
    }
    return made;
  }

  /** The volumes' top directories belong to the mapped root, so root inside may write there. */
  protected override async beforeBoot(spec: SandboxSpec): Promise<void> {
    // The io directory is made afresh on every boot, by the server alone; root inside opens its FIFOs.
    await rm(this.#ioDir(spec.id), { recursive: true, force: true });
    await mkdir(this.#ioDir(spec.id), { mode: 0o700 });
    await lchown(this.#ioDir(spec.id), ROOT_UID, ROOT_UID);
    // On the host too: `runc exec` starts its helper in the root's path (an empty directory here).
    await mkdir(path.join(VISIBLE_AT, "root"), { recursive: true, mode: 0o711 });
    for (const { volumeId } of spec.mounts) await lchown(this.opts.volumePath(volumeId), ROOT_UID, ROOT_UID);
  }

  /**
   * runc mounts the sandbox's root and volumes from inside the user namespace, as the mapped root, who
   * may not pass through the data directory (0700, say). In the holder's mount namespace they are bound
   * under VISIBLE_AT (an empty directory on the host, a tmpfs there) and mounted from there.
   */
  protected override visiblePaths(root: string, sources: string[]) {
    const at = (name: string) => path.join(VISIBLE_AT, name);
    return {
      root: at("root"),
      sources: sources.map((_, i) => at(`bind-${i}`)),
      init: (argv: string[]) => [
        "/bin/sh",
        "-c",
        `set -e; mount -t tmpfs -o mode=0711,size=64k hangar "${VISIBLE_AT}"; n=-1
for from in "$@"; do [ "$from" = -- ] && break; if [ $n = -1 ]; then to=root; else to=bind-$n; fi
mkdir "${VISIBLE_AT}/$to"; mount --rbind "$from" "${VISIBLE_AT}/$to"; n=$((n + 1)); done
while [ "$1" != -- ]; do shift; done; shift; exec "$@"`,
        "hangar-sandbox",
        root,
        ...sources,
        "--",
        ...argv,
      ],
    };
  }
}

/** `to`: a copy of `from` whose every owner is shifted up by ROOT_UID (kept if there, unless `remake`). */
async function shiftedCopy(from: string, to: string, remake: boolean): Promise<string> {
  if (remake) await rm(to, { recursive: true, force: true });
  else if (await lstat(to).catch(() => null)) return to;
  const partial = `${to}.partial`;
  await rm(partial, { recursive: true, force: true });
  await promisify(execFile)("cp", ["-a", "--reflink=auto", "--", from, partial]);
  const seen = new Set<string>(); // hard links: shifted once
  const shift = async (p: string): Promise<void> => {
    const st = await lstat(p);
    if (st.nlink > 1 && !st.isDirectory()) {
      const key = `${st.dev}:${st.ino}`;
      if (seen.has(key)) return;
      seen.add(key);
    }
    const owner = (id: number) => ROOT_UID + (id < MAPPED ? id : MAPPED - 2); // beyond the range: nobody
    await lchown(p, owner(st.uid), owner(st.gid));
    // chown clears setuid and setgid bits: what the image has, it keeps.
    if (!st.isSymbolicLink() && st.mode & 0o6000) await chmod(p, st.mode & 0o7777);
    if (st.isDirectory()) for (const name of await readdir(p)) await shift(path.join(p, name));
  };
  await shift(partial);
  await rename(partial, to);
  return to;
}
