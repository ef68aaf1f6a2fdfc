/**
 * What a hostile sandbox must not do to the host, tested as an attacker would on one engine (one test
 * file per engine: sandbox-hardening*.test.ts): leave a set-id program a local account can run as root
 * (issue #32 item 5), outlive `DELETE` or a server's SIGKILL and restart with a fork bomb (item 6), leave
 * cgroup directories behind (item 21). A real `hangar` process, the official client and raw HTTP.
 *
 * Fork bombs run under a small pids limit (HANGAR_SANDBOX_PIDS_MAX) and CPU; whatever a test leaves in
 * its data dir's cgroups is killed and removed after it, even when it fails (the machine is shared).
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, lstatSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { SandboxClient } from "langsmith-sbx/experimental/sandbox";
import {
  cgroupHierarchies,
  cgroupScopeOf,
  clearCgroupScope,
  type Hangar,
  http,
  startHangar,
  unmountUnder,
  waitFor,
} from "./server.js";

const T = { timeout: 120_000 };
const IMAGE = "hangar/host";
/** Processes a sandbox may have: a fork bomb stops there. */
const PIDS_MAX = 96;
/** An unprivileged local account (nobody). */
const NOBODY = ["--reuid=65534", "--regid=65534", "--clear-groups"];

const clientOf = (h: Hangar) =>
  new SandboxClient({ apiEndpoint: `${h.url}/v2/sandboxes`, apiKey: "test-key", maxRetries: 0 });

/** The sandbox's groups that exist, on any hierarchy. */
const groupsLeft = (dataDir: string, id: string) =>
  cgroupHierarchies()
    .map((h) => join(h, cgroupScopeOf(dataDir), id))
    .filter((d) => existsSync(d));

/** Host pids in the sandbox's groups, with their start times (so a reused pid is not mistaken). */
function processesOf(dataDir: string, id: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const dir of groupsLeft(dataDir, id)) {
    for (const pid of readFileSync(join(dir, "cgroup.procs"), "utf8").split("\n").filter(Boolean)) {
      const started = startTime(pid);
      if (started) found.set(pid, started);
    }
  }
  return found;
}

function startTime(pid: string): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return fields[0] === "Z" ? undefined : fields[19];
  } catch {
    return undefined;
  }
}

/**
 * A host process put in the sandbox's groups on every hierarchy where it has one: one that its engine's
 * init dying does not end (as the report's fork bomb on runc outlived it). `dead`: the signal that
 * ended it, or what it still does after 20 s.
 */
function plantIn(dataDir: string, id: string): { pid: number; dead: Promise<string | null> } {
  const child = spawn("sleep", ["300"], { stdio: "ignore", detached: true });
  planted.push(child);
  for (const dir of groupsLeft(dataDir, id)) writeFileSync(join(dir, "cgroup.procs"), String(child.pid));
  const dead = new Promise<string | null>((r) => {
    child.once("exit", (_code, signal) => r(signal));
    setTimeout(() => r("still running after 20 s"), 20_000).unref();
  });
  return { pid: child.pid!, dead };
}
const planted: ChildProcess[] = [];

/** A command run on the host as nobody: its exit code and output. */
function asNobody(script: string, ...args: string[]) {
  const r = spawnSync("setpriv", [...NOBODY, "/bin/sh", "-c", script, "sh", ...args], { encoding: "utf8" });
  return { code: r.status, stdout: r.stdout.trim(), stderr: r.stderr.trim() };
}

/** Paths under `dir` (not following symlinks) whose name is `name`. */
function findNamed(dir: string, name: string): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    let entries: import("node:fs").Dirent[];
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = join(d, e.name);
      if (e.name === name) found.push(p);
      if (e.isDirectory()) walk(p);
    }
  };
  walk(dir);
  return found;
}

type Engine = "bwrap" | "runsc" | "runc";

/** Servers on `engine` in data dirs of their own, all killed and cleared after the file's tests. */
function serversOn(engine: Engine) {
  const servers: Hangar[] = [];
  const dataDirs: string[] = [];
  const onEngine = async (dataDir?: string) => {
    const dir = dataDir ?? (await mkdtemp(join(tmpdir(), "hangar-hardening-")));
    if (!dataDirs.includes(dir)) dataDirs.push(dir);
    const h = await startHangar({
      dataDir: dir,
      env: { HANGAR_SANDBOX_ENGINE: engine, HANGAR_SANDBOX_PIDS_MAX: String(PIDS_MAX) },
      // A restart ends what the killed server left before it listens; a loaded machine is slow.
      startTimeoutMs: 60_000,
    });
    servers.push(h);
    return h;
  };

  after(async () => {
    for (const child of planted) child.kill("SIGKILL");
    for (const h of servers) await h.kill9();
    for (const dir of dataDirs) {
      clearCgroupScope(dir);
      unmountUnder(dir);
      spawnSync("rm", ["-rf", "--one-file-system", dir]);
    }
  });

  return onEngine;
}

/** Set-id programs, DELETE of a fork bomb, cgroups left (sandbox-hardening*.test.ts). */
export function sandboxHardeningSuite(engine: Engine) {
  const onEngine = serversOn(engine);
  describe(`a hostile sandbox and the host (${engine})`, () => {
    test("past its memory or pids limit: what ends, as README's Security table says", T, async () => {
      const h = await onEngine();
      const c = clientOf(h);
      await c.createTemplate("small", { image: IMAGE, cpu: "500m", memory: "128Mi" });
      const statusOf = async (name: string) => (await c.getSandboxStatus(name)).status;
      /** The sandbox's status once it settles (a sandbox that ends is marked within moments). */
      const settled = async (name: string) => {
        for (let i = 0; i < 20 && (await statusOf(name)) === "ready"; i++)
          await new Promise((r) => setTimeout(r, 250));
        return statusOf(name);
      };

      // Anonymous memory past the limit: on gVisor the whole sandbox ends; elsewhere the process.
      const anon = await c.createSandbox("small", { name: "anon", timeout: 60 });
      // A command whose sandbox ends under it fails (how depends on the engine): only the status is read.
      const grew = await anon
        .run(`perl -e '$x = "a" x (400 * 2**20)'; echo "exit $?"`, { timeout: 60 })
        .catch(() => null);
      if (engine === "runsc") assert.equal(await settled("anon"), "stopped");
      else {
        assert.equal(grew?.stdout, "exit 137\n", "the kernel killed the process");
        assert.equal(await settled("anon"), "ready");
        assert.equal((await anon.run("echo alive")).stdout, "alive\n");
      }
      // Memory no kill frees (a tmpfs file): the whole sandbox ends on every engine, its files kept.
      const shm = await c.createSandbox("small", { name: "shm", timeout: 60 });
      await shm.run("head -c 200M /dev/zero > /dev/shm/x", { timeout: 60 }).catch(() => null);
      assert.equal(await settled("shm"), "stopped");

      // A fork bomb: gVisor ends the whole sandbox; elsewhere it stays inside the pids limit and
      // outlives the command that started it (until a stop or delete).
      const bomb = await c.createSandbox("small", { name: "bomb", timeout: 60 });
      const started = await bomb.run("f() { f | f & }; f; echo started", { timeout: 30 }).catch(() => null);
      if (engine === "runsc") assert.equal(await settled("bomb"), "stopped");
      else {
        assert.match(started?.stdout ?? "", /started/);
        await new Promise((r) => setTimeout(r, 2000));
        const processes = processesOf(h.dataDir, bomb.id!).size;
        // How many live at a moment varies (forks refused at the limit end their shells): seen 46–96.
        assert.ok(processes > 0 && processes <= PIDS_MAX, `${processes} processes`);
        assert.equal(await statusOf("bomb"), "ready");
      }
      for (const name of ["anon", "shm", "bomb"]) await c.deleteSandbox(name);
    });

    test(
      "a set-id program a sandbox writes runs as no local account's root; none can reach it",
      T,
      async () => {
        // The data dir as `mkdir` makes it (0755), as the report's was.
        const dataDir = await mkdtemp(join(tmpdir(), "hangar-hardening-"));
        chmodSync(dataDir, 0o755);
        const h = await onEngine(dataDir);
        const c = clientOf(h);
        await c.createVolume("loot", { size: "1Gi" });
        await c.createTemplate("attacker", {
          image: IMAGE,
          volumeMounts: [{ volume_name: "loot", mount_path: "/data" }],
        });
        const box = await c.createSandbox("attacker", { name: "attacker", timeout: 60 });
        // In a volume and in the sandbox's own layer (the template has no storage limit).
        const made = await box.run(
          "for f in /data/suid-probe /root/suid-probe; do cp /bin/bash $f && chmod 4755 $f; done; stat -c '%a %u' /data/suid-probe /root/suid-probe",
        );
        assert.deepEqual(made, { stdout: "4755 0\n4755 0\n", stderr: "", exit_code: 0 });
        // Stopped (its files stay): gVisor's gofer holds what it wrote open until then (ETXTBSY).
        await box.stop();

        const onHost = findNamed(join(dataDir, "volumes"), "suid-probe").concat(
          findNamed(join(dataDir, "sandboxes"), "suid-probe"),
        );
        assert.equal(onHost.length, 2, `the files on the host: ${onHost.join(", ")}`);
        for (const file of onHost) {
          const st = lstatSync(file);
          // What the attack needs: a set-uid program on the host (root's on bwrap and gVisor).
          assert.ok(st.mode & 0o4000, `${file} is not set-uid on the host (${st.mode.toString(8)})`);
          // Even handed an open descriptor (so the data dir's mode is no barrier), nobody stays nobody:
          // the kernel ignores set-id bits on the nosuid mount.
          const r = spawnSync(
            "/bin/sh",
            ["-c", `exec 3<"$1"; exec setpriv ${NOBODY.join(" ")} /proc/self/fd/3 -p -c 'id -u'`, "sh", file],
            { encoding: "utf8" },
          );
          assert.equal(r.stdout.trim(), "65534", `${file} ran as uid ${r.stdout.trim()}: ${r.stderr}`);
          // And by its path, nobody cannot even reach it: the data dir is the server's alone.
          const byPath = asNobody(`"$1" -p -c 'id -u'`, file);
          assert.notEqual(byPath.code, 0, `nobody ran ${file}: ${byPath.stdout}`);
          assert.match(byPath.stderr, /Permission denied/);
          assert.notEqual(asNobody(`test -e "$1"`, file).code, 0, `nobody sees ${file}`);
        }
        assert.equal(lstatSync(dataDir).mode & 0o777, 0o700);
        await c.deleteSandbox("attacker");
      },
    );

    test("DELETE ends a fork bomb at once; no group of it is left on any hierarchy", T, async () => {
      const h = await onEngine();
      const c = clientOf(h);
      await c.createTemplate("bomber", { image: IMAGE, cpu: "500m", memory: "256Mi" });
      const box = await c.createSandbox("bomber", { name: "bomber", timeout: 60 });
      const groups = groupsLeft(h.dataDir, box.id!);
      assert.ok(groups.length >= 1, "the sandbox has cgroups");
      // Every process loops forking: a slot freed is taken again at once.
      await box.run("f() { f | f & }; f", { wait: false, timeout: 120 });
      await waitFor(() => processesOf(h.dataDir, box.id!).size >= PIDS_MAX / 2 || null, {
        timeoutMs: 30_000,
      }).catch(() => {}); // gVisor's processes are its own: the host sees only gVisor's threads
      const outlives = plantIn(h.dataDir, box.id!);
      const began = Date.now();
      const res = await http(h.url, "DELETE", "/v2/sandboxes/boxes/bomber");
      assert.equal(res.status, 204, res.text);
      assert.ok(Date.now() - began < 30_000, `DELETE took ${Date.now() - began} ms`);
      assert.equal(await outlives.dead, "SIGKILL", "what outlived the engine's init");
      assert.equal((await http(h.url, "GET", "/v2/sandboxes/boxes/bomber")).status, 404);
      assert.deepEqual(groupsLeft(h.dataDir, box.id!), [], "the sandbox's cgroups");
      for (const g of groups) assert.equal(existsSync(g), false, g);

      // A sandbox that simply ends leaves no group either; the server's stop leaves not even its scope.
      const plain = await c.createSandbox("bomber", { name: "plain", timeout: 60 });
      await c.deleteSandbox("plain");
      assert.deepEqual(groupsLeft(h.dataDir, plain.id!), []);
      await c.createSandbox("bomber", { name: "kept", timeout: 60 });
      await h.stop();
      const scopes = cgroupHierarchies()
        .map((d) => join(d, cgroupScopeOf(h.dataDir)))
        .filter((d) => existsSync(d));
      assert.deepEqual(scopes, [], "the server's cgroup scope after its stop");
    });
  });
}

/** A fork bomb across the server's SIGKILL and a restart (sandbox-hardening-restart*.test.ts). */
export function sandboxRestartHardeningSuite(engine: Engine) {
  const onEngine = serversOn(engine);
  describe(`a hostile sandbox across a server restart (${engine})`, () => {
    test("a fork bomb does not survive the server's SIGKILL and a restart", T, async () => {
      const h1 = await onEngine();
      const c1 = clientOf(h1);
      await c1.createTemplate("bomber", { image: IMAGE, cpu: "500m", memory: "256Mi" });
      const box = await c1.createSandbox("bomber", { name: "bomber", timeout: 60 });
      await box.run("f() { f | f & }; f", { wait: false, timeout: 120 });
      const bomb = await waitFor(
        () => {
          const found = processesOf(h1.dataDir, box.id!);
          return found.size >= (engine === "runsc" ? 1 : PIDS_MAX / 2) ? found : null;
        },
        { timeoutMs: 30_000 },
      );
      // And one the engine's init dying does not end, as the report's outlived DELETE and SIGKILL.
      const outlives = plantIn(h1.dataDir, box.id!);
      await h1.kill9();
      const h2 = await onEngine(h1.dataDir);
      const c2 = clientOf(h2);
      const again = await c2.waitForSandbox("bomber", { timeout: 60, pollInterval: 0.2 });
      assert.equal(await outlives.dead, "SIGKILL", "what outlived the dead server's sandbox");
      const survivors = [...bomb].filter(([pid, started]) => startTime(pid) === started);
      assert.deepEqual(survivors, [], "processes of the dead server's sandbox still run");
      // The sandbox booted again, with only its own new processes.
      assert.deepEqual(await again.run("echo fresh"), { stdout: "fresh\n", stderr: "", exit_code: 0 });
      await c2.deleteSandbox("bomber");
      assert.deepEqual(groupsLeft(h2.dataDir, box.id!), []);
    });
  });
}
