/**
 * The gVisor engine (`runsc`, Debian package runsc), an OCI runtime (oci.ts): the sandbox's processes
 * run on gVisor's user-space kernel, not on the host's. The host sees only gVisor's own processes: the
 * sandbox ("sentry", which serves the system calls) runs as an unprivileged uid (nobody) in a user
 * namespace of its own under a seccomp filter, and a gofer serves the files. Root inside is gVisor's
 * root, not the host's; with `--network=none` the sandbox has a loopback interface and nothing else.
 *
 * A kill ends the `runsc exec` client and, from inside the sandbox, stops the command's process group
 * and then sends it SIGKILL.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import type { ExecProcess, ExecRequest, SandboxSpec } from "../provisioner.js";
import { killGroup, type Running, spawnedCommand } from "./host-driver.js";
import { OciRuntimeDriver } from "./oci.js";
import { IO_IN_SANDBOX, isLongCommand, sourceFile } from "./starter.js";

/**
 * gVisor releases before this refuse the statx flags glibc's ls and stat pass (EINVAL): a Debian or
 * Ubuntu userland does not work on them. Debian 12's own runsc is 20221219; bookworm-backports has 2024's.
 */
const OLDEST_RELEASE = "20230101";

export class GvisorDriver extends OciRuntimeDriver {
  readonly engine = "runsc";
  protected readonly runtime = "runsc";
  protected readonly tools = { names: ["runsc", "unshare", "mount", "tini-static"], packages: "runsc tini" };

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

  /**
   * --overlay2=none: writes go through to the sandbox's own layer on the host (kept across restarts,
   * limited by its storage), not to an overlay in gVisor's memory. --directfs=false: the gofer alone
   * opens host files, so the sandbox process (where the sandbox's code runs) is nobody without
   * capabilities; with directfs it would be host root with a few capabilities.
   */
  protected runFlags(cgroupsPath: string | undefined): string[] {
    return [
      "--network=none",
      "--overlay2=none",
      "--directfs=false",
      ...(cgroupsPath ? [] : ["--ignore-cgroups"]),
    ];
  }

  protected linuxConfig(): Record<string, unknown> {
    return {};
  }

  #ioDir(id: string): string {
    return path.join(this.dir(id), "io");
  }

  /** Long commands' files (see LONG_COMMAND_BYTES), written by the server alone: read-only inside. */
  protected override extraBinds(spec: SandboxSpec) {
    return [{ source: this.#ioDir(spec.id), destination: IO_IN_SANDBOX, readonly: true }];
  }

  protected override async beforeBoot(spec: SandboxSpec): Promise<void> {
    await rm(this.#ioDir(spec.id), { recursive: true, force: true });
    await mkdir(this.#ioDir(spec.id), { mode: 0o700 });
  }

  /**
   * Each command is a `runsc exec` (host FIFOs cannot be opened inside gVisor, so no starter): the
   * image's sh changes directory (runsc's --cwd fails a missing one with no message), so a command
   * fails as on every engine: exit 1, the shell saying why.
   */
  protected command(running: Running, request: ExecRequest, env: Record<string, string>): ExecProcess {
    const id = running.spec.id;
    const pidFile = path.join(this.dir(id), "bundle", `exec-${randomUUID()}.pid`);
    let command = request.command;
    let commandFile: string | undefined;
    if (isLongCommand(command)) {
      const name = `command-${randomUUID()}`;
      commandFile = path.join(this.#ioDir(id), name);
      writeFileSync(commandFile, command, { mode: 0o600 });
      command = sourceFile(`${IO_IN_SANDBOX}/${name}`);
    }
    const argv = this.runtimeArgv(
      "exec",
      ...Object.entries(env).flatMap(([k, v]) => ["--env", `${k}=${v}`]),
      "--internal-pid-file",
      pidFile,
      id,
      "/bin/sh",
      "-c",
      'cd -- "$1" || exit 1; shift; exec "$@"',
      "sh",
      request.cwd,
      request.shell,
      "-c",
      command,
    );
    const child = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: ["pipe", "pipe", "pipe"] });
    return spawnedCommand(
      child,
      () => this.#kill(id, pidFile, child),
      () => {
        rmSync(pidFile, { force: true });
        if (commandFile) rmSync(commandFile, { force: true });
      },
    );
  }

  /** Each `runsc exec` leads a process group of its own inside: the command and what it started. */
  #kill(id: string, pidFile: string, client: ChildProcess): void {
    killGroup(client);
    let pid: number;
    try {
      pid = Number(readFileSync(pidFile, "utf8"));
    } catch {
      return; // not started inside
    }
    if (!Number.isInteger(pid) || pid <= 1) return;
    const killer = this.runtimeArgv("exec", id, "/bin/sh", "-c", KILL_GROUP, "sh", String(pid));
    spawn(killer[0]!, killer.slice(1), { stdio: "ignore", timeout: 10_000 }).on("error", () => {});
  }
}

/**
 * Run inside with the group's id as $1. gVisor finishes a fork under way even after the parent got
 * SIGKILL, so the child of a group kill's race outlives it. So the group is stopped first, again and
 * again until each of its processes is stopped (state T in /proc/<pid>/stat; a process in a fork is
 * not yet), at most 100 rounds 10 ms apart: a stopped process forks no more. Then SIGKILL to the group,
 * and to its leader by pid. (A process that left the group with setsid is not reached, as before.)
 */
const KILL_GROUP = `g=$1 round=0
while [ $round -lt 100 ] && kill -STOP -$g 2>/dev/null; do
  moving=
  for stat in /proc/[0-9]*/stat; do
    { read -r line <"$stat"; } 2>/dev/null || continue
    set -- \${line##*") "}
    [ "$3" = "$g" ] && case $1 in T|t|Z|X) ;; *) moving=1 ;; esac
  done
  [ -z "$moving" ] && break
  round=$((round + 1))
  sleep 0.01 2>/dev/null
done
kill -9 -$g $g`;

/** The release date (YYYYMMDD) `runsc --version` names, or null when it names none. */
async function runscRelease(): Promise<string | null> {
  const { stdout } = await promisify(execFile)("runsc", ["--version"]).catch(() => ({ stdout: "" }));
  return /20\d{6}/.exec(stdout)?.[0] ?? null;
}
