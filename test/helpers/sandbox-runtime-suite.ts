/**
 * Sandboxes that run (`/v2/sandboxes/boxes`, `/pools`, the data plane) against a real `hangar` process
 * on one isolation engine, through the official client (`langsmith` 0.5.21 as `langsmith-sbx`; `ws` is
 * installed, so `run()` uses the WebSocket protocol) and raw HTTP for exact statuses. One test file per
 * engine (sandbox-runtime*.test.ts) calls `sandboxRuntimeSuite`.
 *
 * Needs root and the engine's tools (scripts/install-test-deps.sh installs them), like the driver itself.
 */
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  LangSmithCommandTimeoutError,
  LangSmithResourceInUseError,
  LangSmithResourceNotFoundError,
  LangSmithSandboxCreationError,
  LangSmithValidationError,
  type Sandbox,
  SandboxClient,
} from "langsmith-sbx/experimental/sandbox";
import { type Hangar, http, REPO_ROOT, startHangar, UUID_RE, waitFor } from "./server.js";

const T = { timeout: 120_000 };
const IMAGE = "hangar/host";

const clientOf = (h: Hangar) =>
  new SandboxClient({ apiEndpoint: `${h.url}/v2/sandboxes`, apiKey: "test-key", maxRetries: 0 });
const api = (h: Hangar, method: string, path: string, body?: unknown) =>
  http(h.url, method, `/v2/sandboxes${path}`, body);

/** A command's whole result, so a failure shows its exit code and stderr too. */
const succeeded = (stdout: string) => ({ stdout, stderr: "", exit_code: 0 });

async function thrown(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error("expected the call to fail, it succeeded");
}

/** Host processes (not zombies) whose command line mentions `needle`. */
function hostProcessesMentioning(needle: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (/\) Z /.test(stat)) continue;
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
      if (cmd.includes(needle)) found.push(`${pid}: ${cmd}`);
    } catch {}
  }
  return found;
}

/** `/proc/<pid>/status` of a `hostProcessesMentioning` line. */
const hostStatusOf = (line: string) => readFileSync(`/proc/${line.split(":")[0]}/status`, "utf8");

export function sandboxRuntimeSuite(engine: "bwrap" | "runsc" | "runc") {
  const onEngine = (opts: Parameters<typeof startHangar>[0] = {}) =>
    startHangar({ ...opts, env: { ...opts.env, HANGAR_SANDBOX_ENGINE: engine } });

  describe(`sandboxes that run (${engine})`, () => {
    let h: Hangar;
    let c: SandboxClient;
    let first: Sandbox;

    before(async () => {
      h = await onEngine();
      c = clientOf(h);
      await c.createVolume("shared", { size: "1Gi" });
      await c.createTemplate("with-volume", {
        image: IMAGE,
        memory: "256Mi",
        volumeMounts: [{ volume_name: "shared", mount_path: "/data" }],
      });
      await c.createTemplate("plain", { image: IMAGE });
      first = await c.createSandbox("with-volume", { name: "first", timeout: 60 });
    });

    after(async () => {
      await h?.stop();
      // Every process of every sandbox is gone with the server.
      assert.deepEqual(hostProcessesMentioning(h.dataDir), []);
    });

    test("a sandbox from a template with a volume: shape, get, list, status", T, async () => {
      assert.match(first.id!, UUID_RE);
      assert.equal(first.name, "first");
      assert.equal(first.template_name, "with-volume");
      assert.equal(first.status, "ready");
      assert.equal(first.dataplane_url, `${h.url}/v2/sandboxes/dataplane/${first.id}`);
      assert.equal((await c.getSandbox("first")).id, first.id);
      assert.deepEqual(await c.getSandboxStatus("first"), { status: "ready", status_message: null });
      assert.ok((await c.listSandboxes()).some((s) => s.name === "first"));
      const raw = await api(h, "GET", "/boxes/first");
      assert.deepEqual(Object.keys(raw.body).sort(), [
        "created_at",
        "dataplane_url",
        "expires_at",
        "id",
        "idle_ttl_seconds",
        "name",
        "status",
        "status_message",
        "template_name",
        "ttl_seconds",
        "updated_at",
      ]);
    });

    test('run("echo hi") over the WebSocket and over HTTP', T, async () => {
      assert.deepEqual(await first.run("echo hi"), { stdout: "hi\n", stderr: "", exit_code: 0 });
      const res = await fetch(`${first.dataplane_url}/execute`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ command: "echo hi; echo oops >&2; exit 3", shell: "/bin/sh" }),
      });
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { stdout: "hi\n", stderr: "oops\n", exit_code: 3 });
      // env and cwd reach the command.
      const r = await first.run('echo "$GREETING from $(pwd)"', { env: { GREETING: "hello" }, cwd: "/tmp" });
      assert.deepEqual(r, succeeded("hello from /tmp\n"));
      // Values reach the command as they are, quotes and dollars included; a missing cwd fails the command.
      const quoted = await first.run('printf "%s" "$Q"', { env: { Q: `it's "$HOME" \\ $(x)` } });
      assert.deepEqual(quoted, succeeded(`it's "$HOME" \\ $(x)`));
      const noDir = await first.run("pwd", { cwd: "/no/such/dir" });
      assert.notEqual(noDir.exit_code, 0);
      assert.match(noDir.stderr, /\/no\/such\/dir/);
      // What cannot reach a process is refused by name.
      for (const [body, field] of [
        [{ command: "env", env: { "NOT-A-NAME": "x" } }, "env"],
        [{ command: "echo \u0000" }, "command"],
        [{ command: "env", env: { A: "nul\u0000" } }, "env"],
        [{ command: "pwd", cwd: "/tmp\u0000" }, "cwd"],
      ] as const) {
        const bad = await fetch(`${first.dataplane_url}/execute`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        });
        assert.equal(bad.status, 422, JSON.stringify(body));
        const detail = (await bad.json()).detail as { loc: string[]; msg: string }[];
        assert.ok(
          detail.some((d) => d.loc.includes(field)),
          JSON.stringify(detail),
        );
      }
    });

    test("streaming: started, stdout/stderr with byte offsets, input, kill and reconnect", T, async () => {
      const handle = await first.run("printf 'é1\\n'; sleep 0.5; printf 'é2\\n' >&2; echo done", {
        wait: false,
      });
      assert.ok(handle.commandId);
      const chunks = [];
      for await (const chunk of handle) chunks.push(chunk);
      assert.deepEqual(
        chunks.map((ch) => [ch.stream, ch.data, ch.offset]),
        [
          ["stdout", "é1\n", 0],
          ["stderr", "é2\n", 0],
          ["stdout", "done\n", 4],
        ],
      );
      // A reconnect from an offset gets the rest of the output and the exit code.
      const again = await first.reconnect(handle.commandId!, { stdoutOffset: 4 });
      assert.deepEqual(await again.result, { stdout: "done\n", stderr: "é2\n", exit_code: 0 });

      const reader = await first.run("read line; echo got:$line", { wait: false });
      await reader.sendInput("abc\n");
      assert.deepEqual(await reader.result, { stdout: "got:abc\n", stderr: "", exit_code: 0 });

      const sleeper = await first.run("sleep 100", { wait: false });
      await sleeper.kill();
      const killed = await sleeper.result;
      assert.notEqual(killed.exit_code, 0);
    });

    test("write and read files; errors name the file", T, async () => {
      await first.write("/tmp/nested/dir/hello.txt", "hello\n");
      assert.equal(new TextDecoder().decode(await first.read("/tmp/nested/dir/hello.txt")), "hello\n");
      const bytes = new Uint8Array([0, 255, 1, 128, 10]);
      await first.write("/root/bin.dat", bytes);
      assert.deepEqual(await first.read("/root/bin.dat"), bytes);
      assert.deepEqual(await first.run("cat /tmp/nested/dir/hello.txt"), succeeded("hello\n"));

      const missing = await thrown(first.read("/nope.txt"));
      assert.ok(missing instanceof LangSmithResourceNotFoundError, String(missing));
      const dir = await fetch(`${first.dataplane_url}/download?path=/tmp`);
      assert.equal(dir.status, 400);
      assert.equal((await dir.json()).detail.error, "ReadError");
      const relative = await fetch(`${first.dataplane_url}/download?path=relative`);
      assert.equal(relative.status, 422);
    });

    test("a file written to the volume by one sandbox is seen by a second", T, async () => {
      await first.write("/data/from-first.txt", "shared!");
      const second = await c.createSandbox("with-volume", { name: "second", timeout: 60 });
      try {
        assert.deepEqual(await second.run("cat /data/from-first.txt"), succeeded("shared!"));
        await second.run("echo back > /data/from-second.txt");
        assert.equal(new TextDecoder().decode(await first.read("/data/from-second.txt")), "back\n");
      } finally {
        await c.deleteSandbox("second");
      }
    });

    test("a command past its timeout is killed (WebSocket: CommandTimeout; HTTP: 408)", T, async () => {
      const err = await thrown(first.run("sleep 30; echo never", { timeout: 1 }));
      assert.ok(err instanceof LangSmithCommandTimeoutError, String(err));
      const res = await fetch(`${first.dataplane_url}/execute`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ command: "sleep 31", timeout: 1 }),
      });
      assert.equal(res.status, 408);
      assert.equal((await res.json()).detail.error, "CommandTimeout");
      // Killed before it could have started: it does not start later.
      const early = await fetch(`${first.dataplane_url}/execute`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ command: "sleep 32", timeout: 0.001 }),
      });
      assert.equal(early.status, 408);
      // A kill that lands while the command forks: no child forked meanwhile outlives it.
      for (let i = 0; i < 5; i++) {
        const forking = await fetch(`${first.dataplane_url}/execute`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ command: "while :; do sleep 33 & kill $!; done", timeout: 0.3 }),
        });
        assert.equal(forking.status, 408);
      }
      await new Promise((r) => setTimeout(r, 300));
      // The killed commands' processes are gone from the sandbox.
      const ps = await first.run("ps -eo pid,ppid,pgid,stat,args");
      assert.doesNotMatch(ps.stdout, /sleep 3[0-3]/);
    });

    test("a sandbox cannot reach the network or the host's files outside its mounts", T, async () => {
      const port = new URL(h.url).port;
      const net = await first.run(`echo > /dev/tcp/127.0.0.1/${port} && echo connected`);
      assert.notEqual(net.exit_code, 0);
      assert.doesNotMatch(net.stdout, /connected/);
      const links = await first.run("cat /proc/net/dev | tail -n +3 | cut -d: -f1");
      assert.deepEqual(links.stdout.trim().split(/\s+/), ["lo"]);
      const dns = await first.run("getent hosts deb.debian.org || echo no-dns");
      assert.match(dns.stdout, /no-dns/, JSON.stringify(dns));

      for (const hostPath of [h.dataDir, REPO_ROOT, "/etc/shadow", "/etc/ssh"]) {
        const r = await first.run(`ls -d ${hostPath}`);
        assert.notEqual(r.exit_code, 0, `${hostPath} is visible: ${r.stdout}`);
      }
      // The image's files can be changed, but only in the sandbox's own layer.
      await first.run("echo changed > /etc/hostname-test && rm -f /usr/bin/env");
      assert.deepEqual(await first.run("cat /etc/hostname-test"), succeeded("changed\n"));
      assert.ok(readFileSync("/usr/bin/env").length > 0);
      // No capabilities: mounting and setting the clock are refused even as root; kernel knobs are read-only.
      const mount = await first.run("mount -t tmpfs none /mnt");
      assert.notEqual(mount.exit_code, 0);
      assert.notEqual((await first.run("date -s 2020-01-01")).exit_code, 0);
      for (const knob of ["/proc/sys/vm/drop_caches", "/proc/sysrq-trigger"]) {
        const r = await first.run(`echo 1 > ${knob}`);
        assert.notEqual(r.exit_code, 0, `${knob} is writable`);
      }
      assert.equal((await first.run("cat /proc/keys 2>/dev/null | wc -c")).stdout.trim(), "0");
    });

    test("one sandbox cannot see another's processes or files", T, async () => {
      const other = await c.createSandbox("plain", { name: "other", timeout: 60 });
      try {
        await first.run("echo secret > /root/secret.txt; (sleep 300 &) ; echo started");
        const ps = await other.run("ps -eo args");
        assert.doesNotMatch(ps.stdout, /sleep 300/);
        assert.match((await first.run("ps -eo args")).stdout, /sleep 300/);
        const cat = await other.run("cat /root/secret.txt");
        assert.notEqual(cat.exit_code, 0);
        assert.equal((await other.run("ls /data >/dev/null 2>&1 || echo none")).stdout.trim(), "none");
        assert.deepEqual(await other.run("hostname"), succeeded("other\n"));
      } finally {
        await c.deleteSandbox("other");
      }
    });

    test("memory is limited by the template", T, async () => {
      // 400 MiB, touched, cannot fit in the template's 256Mi.
      const r = await first.run("python3 -c 'b = bytearray(400 * 2**20); print(len(b))'", { timeout: 60 });
      assert.notEqual(r.exit_code, 0);
      assert.doesNotMatch(r.stdout, /419430400/);
      if (engine === "runsc") {
        // gVisor's memory is one host process's: past the limit the kernel ends the whole sandbox, which
        // is then stopped (saying why) and boots again with its files.
        await waitFor(async () => (await c.getSandbox("first")).status === "stopped" || null, {
          timeoutMs: 15_000,
        });
        await c.startSandbox("first");
        first = await c.waitForSandbox("first", { timeout: 60, pollInterval: 0.2 });
      }
      // bwrap: the kernel kills the process, the sandbox goes on.
      assert.deepEqual(
        await first.run("python3 -c 'print(len(bytearray(50 * 2**20)))'"),
        succeeded("52428800\n"),
      );
    });

    test(
      "the sandbox's own files are limited by the template's storage; /info names the engine",
      T,
      async () => {
        assert.equal((await http(h.url, "GET", "/info")).body.sandboxes.engine, engine);
        await c.createTemplate("small-disk", { image: IMAGE, storage: "32Mi" });
        const small = await c.createSandbox("small-disk", { name: "small-disk", timeout: 60 });
        try {
          const fill = await small.run("dd if=/dev/zero of=/root/fill bs=1M count=64 2>&1; sync");
          assert.match(fill.stdout, /No space left on device/);
          const size = Number((await small.run("stat -c %s /root/fill")).stdout.trim());
          assert.ok(size > 16 * 2 ** 20 && size <= 32 * 2 ** 20, `wrote ${size} bytes`);
          // Freed space can be written again; the limit is per sandbox, not the host's disk.
          assert.deepEqual(
            await small.run("rm /root/fill && echo ok > /root/small && cat /root/small"),
            succeeded("ok\n"),
          );
          assert.equal(
            (
              await first.run("dd if=/dev/zero of=/tmp/big bs=1M count=64 >/dev/null 2>&1; echo $?")
            ).stdout.trim(),
            "0",
          );
          await first.run("rm -f /tmp/big");
        } finally {
          await c.deleteSandbox("small-disk");
          await c.deleteTemplate("small-disk");
        }
      },
    );

    test("root inside is not root on the host where the engine has a user namespace", T, async () => {
      assert.equal((await first.run("id -u")).stdout.trim(), "0");
      if (engine === "runsc") {
        // The sandbox's processes run on gVisor's kernel; on the host there is only gVisor's sandbox.
        const sentries = hostProcessesMentioning("runsc-sandbox").filter((line) =>
          line.endsWith(` ${first.id} `),
        );
        assert.equal(sentries.length, 1, "the sandbox's gVisor process on the host");
        const uid = /^Uid:\s+(\d+)/m.exec(hostStatusOf(sentries[0]!))![1];
        assert.notEqual(uid, "0");
      } else if (engine === "runc") {
        // A user namespace: root inside is an unprivileged uid outside; the seccomp filter refuses a
        // new namespace (and mounts, the keyring, ...), which the user namespace alone would allow.
        await first.run("(sleep 301 &)");
        const status = hostStatusOf(hostProcessesMentioning("sleep 301")[0]!);
        assert.match(status, /^Uid:\s+1000000000\s/m);
        await first.run("pkill -f 'sleep 301'");
        const nested = await first.run("unshare --user --map-root-user true");
        assert.notEqual(nested.exit_code, 0);
        assert.match(nested.stderr, /Operation not permitted/);
        // Its own files and its volumes are root's inside.
        assert.deepEqual(
          await first.run("stat -c %u /root /data && touch /data/by-root"),
          succeeded("0\n0\n"),
        );
      } else {
        // bubblewrap has no user namespace: uid 0 outside too, with every capability dropped.
        await first.run("(sleep 301 &)");
        const status = hostStatusOf(hostProcessesMentioning("sleep 301")[0]!);
        assert.match(status, /^Uid:\s+0\s/m);
        assert.match(status, /^CapEff:\s+0+$/m);
        await first.run("pkill -f 'sleep 301'");
      }
    });

    test("rename; errors: unknown template, name in use, validation, template in use", T, async () => {
      const renamed = await c.updateSandbox("first", "first-renamed");
      assert.equal(renamed.id, first.id);
      assert.equal(renamed.dataplane_url, first.dataplane_url);
      await c.updateSandbox("first-renamed", "first");

      const noTemplate = await api(h, "POST", "/boxes", { template_name: "ghost" });
      assert.equal(noTemplate.status, 404);
      assert.equal(noTemplate.body.detail.error, "TemplateNotFound");
      const dup = await api(h, "POST", "/boxes", { template_name: "plain", name: "first" });
      assert.equal(dup.status, 409);
      const bad = await api(h, "POST", "/boxes", {
        template_name: "plain",
        name: "Bad_Name",
        ttl_seconds: -1,
      });
      assert.equal(bad.status, 422);
      assert.deepEqual(bad.body.detail.map((i: { loc: string[] }) => i.loc).sort(), [
        ["body", "name"],
        ["body", "ttl_seconds"],
      ]);
      assert.equal((await api(h, "GET", "/boxes/ghost")).status, 404);

      const inUse = await thrown(c.deleteTemplate("with-volume"));
      assert.ok(inUse instanceof LangSmithResourceInUseError);
      assert.match(inUse.message, /in use by sandboxes: first/);
      // The volume is mounted by the template (which the sandbox uses).
      assert.ok((await thrown(c.deleteVolume("shared"))) instanceof LangSmithResourceInUseError);
    });

    test(
      "an image that is not in the image store is refused; one with no shell fails the sandbox (503)",
      T,
      async () => {
        const missing = await thrown(c.createTemplate("missing-image", { image: "python:3.12-slim" }));
        assert.match(missing.message, /not in the image store/);

        // An image directory without /bin/sh fails fast, saying so.
        mkdirSync(join(h.dataDir, "images", "empty"), { recursive: true });
        await c.createTemplate("empty-image", { image: "empty" });
        const noShell = await thrown(c.createSandbox("empty-image", { name: "no-shell" }));
        assert.equal((await c.getSandboxStatus("no-shell")).status, "failed");
        assert.ok(noShell instanceof LangSmithSandboxCreationError, String(noShell));
        assert.match(noShell.message, /\/bin\/sh/);
        await c.deleteSandbox("no-shell");
        await c.deleteTemplate("empty-image");
      },
    );

    test(
      "without wait_for_ready the sandbox is provisioning, then ready; data plane refuses until then",
      T,
      async () => {
        const box = await c.createSandbox("plain", { name: "later", waitForReady: false });
        assert.equal(box.status, "provisioning");
        const ready = await c.waitForSandbox("later", { timeout: 60, pollInterval: 0.2 });
        assert.equal(ready.status, "ready");
        assert.deepEqual(await ready.run("echo ok"), succeeded("ok\n"));
        await c.deleteSandbox("later");
        const gone = await fetch(`${ready.dataplane_url}/execute`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ command: "true" }),
        });
        assert.equal(gone.status, 404);
      },
    );

    test("stop keeps the files, start boots the sandbox again", T, async () => {
      const box = await c.createSandbox("plain", { name: "stopper", timeout: 60 });
      await box.write("/root/keep.txt", "kept");
      await box.stop();
      assert.equal((await c.getSandboxStatus("stopper")).status, "stopped");
      const notReady = await fetch(
        `${box.dataplane_url ?? (await c.getSandbox("stopper")).dataplane_url}/execute`,
        {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ command: "true" }),
        },
      );
      assert.equal(notReady.status, 400);
      await box.start({ timeout: 60 });
      assert.deepEqual(await box.run("cat /root/keep.txt"), succeeded("kept"));
      await c.deleteSandbox("stopper");
    });

    test("TTLs delete sandboxes: total and idle", T, async () => {
      const total = await api(h, "POST", "/boxes", {
        template_name: "plain",
        name: "short-lived",
        ttl_seconds: 2,
      });
      assert.equal(total.status, 201, total.text);
      assert.ok(total.body.expires_at);
      const idle = await api(h, "POST", "/boxes", {
        template_name: "plain",
        name: "idle",
        idle_ttl_seconds: 3,
      });
      assert.equal(idle.status, 201, idle.text);
      await waitFor(async () => (await api(h, "GET", "/boxes/short-lived")).status === 404 || null, {
        timeoutMs: 30_000,
      });
      await waitFor(async () => (await api(h, "GET", "/boxes/idle")).status === 404 || null, {
        timeoutMs: 30_000,
      });
      assert.deepEqual(hostProcessesMentioning(total.body.id), []);
      assert.deepEqual(hostProcessesMentioning(idle.body.id), []);
    });

    test("pools: warm sandboxes are claimed by creates for their template", T, async () => {
      const pool = await c.createPool("warm", { templateName: "plain", replicas: 1, timeout: 60 });
      assert.equal(pool.replicas, 1);
      assert.deepEqual(
        (await c.listPools()).map((p) => p.name),
        ["warm"],
      );
      // Warm members are not listed as sandboxes.
      const before = (await c.listSandboxes()).map((s) => s.name);
      const claimed = await c.createSandbox("plain", { name: "from-pool", timeout: 60 });
      assert.equal(claimed.status, "ready");
      const hostnameAndOk = await claimed.run("hostname; echo ok");
      assert.equal(hostnameAndOk.stdout.split("\n")[1], "ok", JSON.stringify(hostnameAndOk));
      assert.deepEqual(
        (await c.listSandboxes()).map((s) => s.name),
        [...before, "from-pool"],
      );
      // The template with volumes cannot be pooled.
      const stateful = await thrown(c.createPool("stateful", { templateName: "with-volume", replicas: 1 }));
      assert.ok(stateful instanceof LangSmithValidationError, String(stateful));
      // replicas 0 pauses the pool; deleting it leaves the claimed sandbox alone.
      assert.equal((await c.updatePool("warm", { replicas: 0 })).replicas, 0);
      const inUse = await thrown(c.deleteTemplate("plain"));
      assert.match(inUse.message, /pools: warm/);
      await c.deletePool("warm");
      assert.deepEqual(await claimed.run("echo still"), succeeded("still\n"));
      await c.deleteSandbox("from-pool");
    });
  });

  describe(`sandboxes across a server restart (${engine})`, () => {
    test("a running sandbox boots again with its files; no process outlives the server", T, async () => {
      const h1 = await onEngine();
      const c1 = clientOf(h1);
      await c1.createTemplate("plain", { image: IMAGE });
      const box = await c1.createSandbox("plain", { name: "durable", timeout: 60 });
      await box.write("/root/state.txt", "before restart");
      await box.run("(sleep 600 &)");
      await h1.kill9();
      // Killed without a chance to clean up: the sandbox's processes still die with it.
      await waitFor(() => hostProcessesMentioning(h1.dataDir).length === 0 || null, { timeoutMs: 15_000 });

      const h2 = await onEngine({ dataDir: h1.dataDir });
      try {
        const c2 = clientOf(h2);
        const again = await c2.waitForSandbox("durable", { timeout: 60, pollInterval: 0.2 });
        assert.deepEqual(await again.run("cat /root/state.txt"), succeeded("before restart"));
        assert.doesNotMatch((await again.run("ps -eo args")).stdout, /sleep 600/);
      } finally {
        await h2.stop();
      }
      assert.deepEqual(hostProcessesMentioning(h1.dataDir), []);
    });
  });
}
