/**
 * The bubblewrap engine: Linux namespaces on the host kernel, no container engine.
 *
 * The init (after host-driver.ts's holder mounted the overlays): bwrap --unshare-pid/net/ipc/uts/cgroup
 * --cap-drop ALL, the template's volumes bound at their mount paths → pid 1 (bwrap's reaper) → the
 * sandbox's command starter (STARTER, run by the image's /bin/sh). When the server's pipe closes the
 * starter's read ends, pid 1 exits and the kernel kills every process of the sandbox's pid namespace
 * (`--die-with-parent` does the same from the other side).
 *
 * Commands go through the starter (starter.ts): already in the sandbox's namespaces and cgroups,
 * without capabilities and with no_new_privs, as everything under bwrap's pid 1 is.
 *
 * What it does not give: a user namespace (uid 0 inside is uid 0 on the host, without capabilities)
 * and a seccomp filter; the host kernel's whole system call surface is reachable.
 */
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { rm } from "node:fs/promises";
import path from "node:path";
import type { ExecProcess, ExecRequest, SandboxSpec } from "../provisioner.js";
import { HostSandboxDriver, type Running } from "./host-driver.js";
import { IO_IN_SANDBOX, killSandboxTree, STARTER, Starter, startCommand } from "./starter.js";

/**
 * Kernel knobs under /proc that root may write by file mode alone (no capability needed): made
 * read-only. Bound from the host's /proc: the same kernel-wide values (net.* show the host's).
 */
const READ_ONLY_PROC = ["sys", "sysrq-trigger", "irq", "bus", "fs"];
/** /proc files that leak host information: hidden behind /dev/null (those this kernel has). */
const MASKED_PROC = ["kcore", "keys", "timer_list", "sched_debug", "latency_stats"];

export class BwrapDriver extends HostSandboxDriver {
  readonly engine = "bwrap";
  protected readonly tools = {
    names: ["bwrap", "unshare", "mount", "mkfifo"],
    packages: "bubblewrap util-linux mount coreutils",
  };

  #ioDir(id: string): string {
    return path.join(this.dir(id), "io");
  }

  protected async initCommand(spec: SandboxSpec, { root }: { root: string }) {
    // Made afresh on every boot, by the server alone: the sandbox sees it read-only.
    await rm(this.#ioDir(spec.id), { recursive: true, force: true });
    mkdirSync(this.#ioDir(spec.id), { mode: 0o700 });
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
      "--ro-bind",
      this.#ioDir(spec.id),
      IO_IN_SANDBOX,
      ...spec.mounts.flatMap((m) => ["--bind", this.opts.volumePath(m.volumeId), m.mountPath]),
      "--clearenv",
      "--setenv",
      "PATH",
      "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
      "--",
      "/bin/sh",
      "-c",
      STARTER,
    ];
    return { argv, fds: 1 };
  }

  /** Its io directory is made by the server alone: nothing may be added once the sandbox's files go. */
  protected override async afterHalt(_id: string, handle: unknown): Promise<void> {
    await (handle as { starter: Starter } | undefined)?.starter.stop();
  }

  /** bwrap writes `{"child-pid": N, ...}` to its info fd once the namespaces exist: pid 1's host pid. */
  protected started(init: ChildProcess, spec: SandboxSpec): Promise<{ pid1: number; starter: Starter }> {
    const starter = new Starter(init, this.#ioDir(spec.id));
    return new Promise((resolve, reject) => {
      const info = init.stdio[3] as NodeJS.ReadableStream;
      let text = "";
      const onExit = () => reject(new Error("exited"));
      info.setEncoding("utf8");
      const onData = (chunk: string) => {
        text += chunk;
        const match = /"child-pid":\s*(\d+)/.exec(text);
        if (match || text.length > 4096) {
          info.off("data", onData);
          info.resume(); // bwrap writes nothing more there
          init.off("exit", onExit);
          if (match) resolve({ pid1: Number(match[1]), starter });
          else reject(new Error("bwrap's info is not what it should be"));
        }
      };
      info.on("data", onData);
      init.once("exit", onExit);
    });
  }

  protected command(running: Running, request: ExecRequest, env: Record<string, string>): ExecProcess {
    const { pid1, starter } = running.handle as { pid1: number; starter: Starter };
    return startCommand(
      starter,
      request,
      env,
      (pid) => void killSandboxTree(pid1, pid, running.cgroupProcs[0]),
    );
  }
}
