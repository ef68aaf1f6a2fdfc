/**
 * The `hangar` CLI as a real process: exit codes, what goes to stdout and stderr, and startup failures
 * (bad config, a graph that throws at import, a port in use) reported as one message, without a stack.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BIN = path.join(ROOT, "bin/hangar.js");
const EXAMPLES = path.join(ROOT, "examples/langgraph.json");

const roots: string[] = [];
after(() => {
  for (const dir of roots) rmSync(dir, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "hangar-cli-"));
  roots.push(dir);
  return dir;
}

/** The environment without any HANGAR_* setting of the machine running the tests. */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("HANGAR_") && k !== "LANGGRAPH_CONFIG"),
  );
}

function start(args: string[]): ChildProcess & { out: () => string; err: () => string } {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: cleanEnv(), stdio: "pipe" });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    stdout += d;
  });
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  return Object.assign(child, { out: () => stdout, err: () => stderr });
}

function exited(child: ChildProcess, timeoutMs = 60_000): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`hangar did not exit within ${timeoutMs} ms`));
    }, timeoutMs);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

async function waitFor(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function run(args: string[]) {
  const child = start(args);
  const code = await exited(child);
  return { code, stdout: child.out(), stderr: child.err() };
}

function assertNoStack(stderr: string) {
  assert.doesNotMatch(stderr, /\n\s+at .+:\d+:\d+\)?\n/, `stderr shows a stack trace:\n${stderr}`);
}

describe("hangar CLI", () => {
  test("--help prints usage on stdout and exits 0", async () => {
    const { code, stdout } = await run(["--help"]);
    assert.equal(code, 0);
    assert.match(stdout, /Usage: hangar <command>/);
    assert.match(stdout, /dev/);
    assert.match(stdout, /serve/);
  });

  test("<command> --help exits 0", async () => {
    const { code, stdout } = await run(["serve", "--help"]);
    assert.equal(code, 0);
    assert.match(stdout, /Usage: hangar serve/);
    assert.match(stdout, /--port/);
  });

  test("--version prints the package version", async () => {
    const { code, stdout } = await run(["--version"]);
    assert.equal(code, 0);
    assert.match(stdout, /^hangar \d+\.\d+\.\d+/);
  });

  test("an unknown command exits 2 with a message and usage", async () => {
    const { code, stderr, stdout } = await run(["launch"]);
    assert.equal(code, 2);
    assert.match(stderr, /unknown command "launch"/);
    assert.match(stderr, /Usage: hangar/);
    assert.equal(stdout, "");
  });

  test("an unknown flag exits 2", async () => {
    const { code, stderr } = await run(["dev", "--colour"]);
    assert.equal(code, 2);
    assert.match(stderr, /unknown option --colour/);
  });

  test("a missing config file exits non-zero and says which file", async () => {
    const dir = tempDir();
    const { code, stderr, stdout } = await run(["dev", "--config", path.join(dir, "langgraph.json")]);
    assert.notEqual(code, 0);
    assert.ok(stderr.includes(`Config file not found: ${path.join(dir, "langgraph.json")}`), stderr);
    assert.equal(stdout, "");
    assertNoStack(stderr);
  });

  test("an invalid setting exits 1 naming the flag", async () => {
    const { code, stderr } = await run(["serve", "--config", EXAMPLES, "--port", "99999"]);
    assert.equal(code, 1);
    assert.match(stderr, /--port: must be an integer from 0 to 65535/);
  });

  test("a graph file that throws at import exits non-zero with its message", async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, "broken.mjs"), 'throw new Error("kaboom at import time");\n');
    writeFileSync(
      path.join(dir, "langgraph.json"),
      JSON.stringify({ graphs: { broken: "./broken.mjs:graph" } }),
    );
    const { code, stderr, stdout } = await run(["dev", "--config", dir, "--port", "0"]);
    assert.notEqual(code, 0);
    assert.match(stderr, /kaboom at import time/);
    assert.doesNotMatch(stdout, /listening on/);
    assertNoStack(stderr);
  });

  test("a port in use exits non-zero with a clear message", async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const { port } = blocker.address() as { port: number };
    try {
      const args = ["serve", "--config", EXAMPLES, "--host", "127.0.0.1", "--port", String(port)];
      const { code, stderr, stdout } = await run([...args, "--data-dir", tempDir()]);
      assert.notEqual(code, 0);
      assert.ok(
        stderr.includes(
          `Port ${port} on 127.0.0.1 is already in use; pick another with --port or HANGAR_PORT`,
        ),
        stderr,
      );
      assert.doesNotMatch(stdout, /listening on/);
      assertNoStack(stderr);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  test("--port 0 prints the real URL on stdout; SIGTERM shuts down with exit 0", async () => {
    const child = start(["dev", "--config", EXAMPLES, "--port", "0", "--data-dir", tempDir()]);
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no URL within 60 s; stderr:\n${child.err()}`)),
          60_000,
        );
        child.stdout?.on("data", () => {
          const match = /listening on (http:\/\/\S+)/.exec(child.out());
          if (match) {
            clearTimeout(timer);
            resolve(match[1]);
          }
        });
        child.once("exit", (code) => reject(new Error(`exited ${code} before listening:\n${child.err()}`)));
      });
      assert.match(url, /^http:\/\/127\.0\.0\.1:(\d+)$/);
      assert.notEqual(url, "http://127.0.0.1:0");
      assert.equal(child.out(), `Hangar listening on ${url}\n`);
      // stdout and stderr are separate pipes: the banner may arrive a moment after the URL.
      await waitFor(() => child.err().includes(`${url}/docs`), "dev prints the docs URL on stderr");
      child.kill("SIGTERM");
      assert.equal(await exited(child, 30_000), 0);
      assert.match(child.err(), /shutting down/);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  });
});
