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
 * Images laid by hand and the built-in image are used as they are: root inside reads them but cannot
 * change them, as for files of another user. (crun would do the same; Debian 12's crun 1.8 refuses
 * hybrid cgroup hierarchies, so runc it is.)
 *
 * A kill ends the `runc exec` client and, from the host, the command's process group (runc makes each
 * command a session leader), once its pid is confirmed to be in this sandbox's cgroup.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { chmod, lchown, lstat, mkdir, readdir, rename, rm } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { promisify } from "node:util";
import type { ExecProcess, ExecRequest, SandboxSpec } from "../provisioner.js";
import { killGroup, type Running } from "./host-driver.js";
import type { ImageLayer } from "./images.js";
import { NAMESPACES, OciRuntimeDriver } from "./oci.js";

/** How long a command's output is read after it exited, when what it started still holds its pipes. */
const STDIO_GRACE_MS = 50;
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

  protected runFlags(): string[] {
    return [];
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

  protected execPid(pidFile: string): string[] {
    return ["--pid-file", pidFile];
  }

  /**
   * `runc exec` attached relays the command's output until every process holding the pipes it made
   * closed them: a command that left something running (`(sleep 300 &)`) would never end. Detached
   * (`--detach`), the command gets the server's pipes themselves and runc exits at once; the image's sh
   * runs the command and reports its exit code on fd 3 (`--preserve-fds`), which the command does not
   * inherit. No code reported (the group was killed) is SIGKILL's. Once it exited, what it wrote is
   * read and its streams end, whatever still holds them (as `docker exec`'s do).
   */
  protected override command(
    running: Running,
    request: ExecRequest,
    env: Record<string, string>,
  ): ExecProcess {
    const id = running.spec.id;
    const pidFile = this.pidFile(id);
    const flags = ["--detach", "--preserve-fds", "1", ...this.execPid(pidFile)];
    const script = 'cd -- "$1" || { echo 1 >&3; exit 1; }; shift; "$@" 3>&-; echo $? >&3';
    const argv = this.execArgv(id, request, env, flags, script);
    const child = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: ["pipe", "pipe", "pipe", "pipe"] });
    const status = child.stdio[3] as Readable;
    let reported = "";
    status.setEncoding("utf8").on("data", (chunk: string) => {
      reported += chunk;
    });
    const statusClosed = new Promise((resolve) => status.once("close", resolve));
    const started = new Promise<boolean>((resolve) => {
      child.once("error", () => resolve(false));
      child.once("exit", (code) => resolve(code === 0));
    });
    const exited = started.then(async (ok) => {
      if (ok) await statusClosed;
      const code = ok ? Number.parseInt(reported, 10) : 127;
      const streams = [child.stdout!, child.stderr!];
      const ended = Promise.all(streams.map((s) => new Promise((resolve) => s.once("end", resolve))));
      await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, STDIO_GRACE_MS))]);
      for (const stream of streams) if (!stream.readableEnded) stream.push(null);
      rmSync(pidFile, { force: true });
      return Number.isInteger(code) ? code : 128 + 9;
    });
    child.stdin!.on("error", () => {});
    const kill = () => this.killCommand(id, pidFile, child);
    return { stdout: child.stdout!, stderr: child.stderr!, stdin: child.stdin!, exited, kill };
  }

  protected killCommand(id: string, pidFile: string, client: ChildProcess): void {
    killGroup(client);
    let pid: number;
    try {
      pid = Number(readFileSync(pidFile, "utf8"));
      // A pid read after the command ended may be another process's by now: only this sandbox's.
      if (!Number.isInteger(pid) || pid <= 1 || !readFileSync(`/proc/${pid}/cgroup`, "utf8").includes(id))
        return;
    } catch {
      return; // not started, or already gone
    }
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // already gone
    }
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
    // On the host too: `runc exec` starts its helper in the root's path (an empty directory here).
    await mkdir(path.join(VISIBLE_AT, "root"), { recursive: true, mode: 0o711 });
    for (const { volumeId } of spec.mounts) await lchown(this.opts.volumePath(volumeId), ROOT_UID, ROOT_UID);
  }

  /**
   * runc mounts the sandbox's root and volumes from inside the user namespace, as the mapped root, who
   * may not pass through the data directory (0700, say). In the holder's mount namespace they are bound
   * under VISIBLE_AT (an empty directory on the host, a tmpfs there) and mounted from there.
   */
  protected override visiblePaths(root: string, volumes: string[]) {
    const at = (name: string) => path.join(VISIBLE_AT, name);
    return {
      root: at("root"),
      volumes: volumes.map((_, i) => at(`volume-${i}`)),
      init: (argv: string[]) => [
        "/bin/sh",
        "-c",
        `set -e; mount -t tmpfs -o mode=0711,size=64k hangar "${VISIBLE_AT}"; n=-1
for from in "$@"; do [ "$from" = -- ] && break; if [ $n = -1 ]; then to=root; else to=volume-$n; fi
mkdir "${VISIBLE_AT}/$to"; mount --rbind "$from" "${VISIBLE_AT}/$to"; n=$((n + 1)); done
while [ "$1" != -- ]; do shift; done; shift; exec "$@"`,
        "hangar-sandbox",
        root,
        ...volumes,
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
