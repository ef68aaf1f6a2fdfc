/**
 * The bubblewrap engine: Linux namespaces on the host kernel, no container engine.
 *
 * The init (after host-driver.ts's holder mounted the overlays): bwrap --unshare-pid/net/ipc/uts/cgroup
 * --cap-drop ALL → pid 1 (bwrap's reaper) → `sh -c 'read _'`. When the server's pipe closes the read
 * ends, pid 1 exits and the kernel kills every process of the sandbox's pid namespace
 * (`--die-with-parent` does the same from the other side).
 *
 * Each command: sh (joins the cgroups) → nsenter (the holder's mount namespace, the init's
 * net/ipc/uts/cgroup namespaces) → bwrap (its pid namespace, a fresh mount namespace with the same
 * merged root, the template's volumes bound at their mount paths, every capability dropped,
 * no_new_privs) → `shell -c command`. The spawn is its own process group, which is what a timeout or
 * a `kill` kills.
 *
 * What it does not give: a user namespace (uid 0 inside is uid 0 on the host, without capabilities)
 * and a seccomp filter; the host kernel's whole system call surface is reachable.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, existsSync, openSync } from "node:fs";
import type { ExecRequest, SandboxSpec } from "../provisioner.js";
import {
  type EngineCommand,
  HostSandboxDriver,
  JOIN_CGROUPS,
  killGroup,
  type Running,
} from "./host-driver.js";

/**
 * Kernel knobs under /proc that root may write by file mode alone (no capability needed): made
 * read-only. Bound from the host's /proc: the same kernel-wide values (net.* show the host's).
 */
const READ_ONLY_PROC = ["sys", "sysrq-trigger", "irq", "bus", "fs"];
/** /proc files that leak host information: hidden behind /dev/null (those this kernel has). */
const MASKED_PROC = ["kcore", "keys", "timer_list", "sched_debug", "latency_stats"];
/** The sandbox's view, for its init and each command alike: its merged root, a /proc, a /dev. */
const sandboxRoot = (root: string): string[] => [
  "--bind",
  root,
  "/",
  "--proc",
  "/proc",
  ...READ_ONLY_PROC.flatMap((p) => ["--ro-bind-try", `/proc/${p}`, `/proc/${p}`]),
  ...MASKED_PROC.filter((p) => existsSync(`/proc/${p}`)).flatMap((p) => [
    "--ro-bind",
    "/dev/null",
    `/proc/${p}`,
  ]),
  "--dev",
  "/dev",
];

export class BwrapDriver extends HostSandboxDriver {
  readonly engine = "bwrap";
  protected readonly tools = {
    names: ["bwrap", "unshare", "nsenter", "mount"],
    packages: "bubblewrap util-linux mount",
  };

  protected initCommand(spec: SandboxSpec, { root }: { root: string }) {
    const argv = [
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
      ...sandboxRoot(root),
      "--clearenv",
      "--",
      "/bin/sh",
      "-c",
      "read _",
    ];
    return { argv, fds: 1 };
  }

  /** bwrap writes `{"child-pid": N, ...}` to its info fd once the namespaces exist: pid 1's host pid. */
  protected started(init: ChildProcess): Promise<number> {
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

  protected command(running: Running, request: ExecRequest, env: Record<string, string>): EngineCommand {
    const pid1 = running.handle as number;
    const ns = (kind: string) => `/proc/${pid1}/ns/${kind}`;
    const pidns = openSync(ns("pid"), "r");
    const child = spawn(
      "/bin/sh",
      [
        "-c",
        JOIN_CGROUPS,
        "hangar-exec",
        ...running.cgroupProcs,
        "--",
        "nsenter",
        `--mount=/proc/${running.init.pid}/ns/mnt`,
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
        ...sandboxRoot(running.root),
        ...running.spec.mounts.flatMap((m) => ["--bind", this.opts.volumePath(m.volumeId), m.mountPath]),
        "--clearenv",
        ...Object.entries(env).flatMap(([k, v]) => ["--setenv", k, v]),
        "--chdir",
        request.cwd,
        "--",
        request.shell,
        "-c",
        request.command,
      ],
      { detached: true, stdio: ["pipe", "pipe", "pipe", pidns], env: this.limitEnv(running.spec) },
    );
    closeSync(pidns);
    return { child, kill: () => killGroup(child) };
  }
}
