/**
 * A command's output reaches its readers even when the server's event loop falls behind: the grace
 * period after the command exits must not cut off output that is already in the pipe. Real processes
 * (`/bin/sh`), no sandbox: this is the part of `CommandRun` that does not depend on the driver.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { PassThrough } from "node:stream";
import { test } from "node:test";
import { type CommandEvent, CommandRun } from "../../src/sandboxes/commands.js";
import type { ExecProcess } from "../../src/sandboxes/provisioner.js";

function shell(command: string): ExecProcess & { onExit(listener: () => void): void } {
  const child = spawn("/bin/sh", ["-c", command], { stdio: ["pipe", "pipe", "pipe"] });
  return {
    stdout: child.stdout,
    stderr: child.stderr,
    stdin: child.stdin,
    kill: () => child.kill("SIGKILL"),
    exited: new Promise((resolve) => child.once("exit", (code) => resolve(code ?? 137))),
    onExit: (listener) => child.once("exit", listener),
  };
}

const options = { timeoutSeconds: 30, idleTimeoutSeconds: 0, killOnDisconnect: false, keepSeconds: 0 };

async function outputOf(run: CommandRun): Promise<{ stdout: string; exit?: number }> {
  let stdout = "";
  let exit: number | undefined;
  run.attach((event: CommandEvent) => {
    if (event.type === "stdout") stdout += event.data;
    if (event.type === "exit") exit = event.exit_code;
  });
  await run.done;
  return { stdout, exit };
}

test("output written after the exit, within the grace period, is kept", async () => {
  const proc = shell("(sleep 0.05; echo late) & echo early");
  assert.deepEqual(await outputOf(new CommandRun(proc, options)), { stdout: "early\nlate\n", exit: 0 });
});

test("a stalled event loop does not cut off output already in the pipe", async () => {
  // The output arrives 50 ms after the exit. The loop is blocked right after it handled the exit (in a
  // microtask queued after CommandRun's) for longer than the grace period: its next turn finds the
  // grace timer due before it polls the pipe, as a server starved of CPU does.
  const proc = shell("(sleep 0.05; echo late) & exit 0");
  proc.onExit(() =>
    queueMicrotask(() => {
      const until = Date.now() + 400;
      while (Date.now() < until) {}
    }),
  );
  assert.deepEqual(await outputOf(new CommandRun(proc, options)), { stdout: "late\n", exit: 0 });
});

test("a background process holding the pipe does not hold the command open", async () => {
  const proc = shell("sleep 5 & echo started");
  const started = Date.now();
  assert.deepEqual(await outputOf(new CommandRun(proc, options)), { stdout: "started\n", exit: 0 });
  assert.ok(Date.now() - started < 3000, "the command was held open by its background process");
});

test("output held by a listener past the exit's grace period still arrives whole", async () => {
  // A WebSocket whose client stops reading holds the command's output: the pipes are not read. The
  // command exits with output still in them; the grace period must not cut it off while it is held.
  // Its stdout is relayed as the starter's FIFOs are (Node resumes a child's own stdout when it exits).
  const proc = shell("head -c 100000 /dev/zero | tr '\\0' h; (sleep 0.05; echo late) & exit 0");
  const relayed = new PassThrough();
  proc.stdout.pipe(relayed);
  const run = new CommandRun({ ...proc, stdout: relayed }, options);
  let stdout = "";
  let exit: number | undefined;
  const listener = (event: CommandEvent) => {
    if (event.type === "stdout") stdout += event.data;
    if (event.type === "exit") exit = event.exit_code;
  };
  run.attach(listener);
  run.hold(listener);
  await new Promise((resolve) => setTimeout(resolve, 800));
  assert.equal(exit, undefined, "the command's end waits for its held output");
  run.release(listener);
  await run.done;
  assert.equal(stdout, `${"h".repeat(100_000)}late\n`);
  assert.equal(exit, 0);
});

test("waiting for stdin to drain holds nothing once it drained, while the command runs on", async () => {
  // Each input backpressure pause of /execute/ws waits once; what it waited with must not stay
  // reachable until the command ends (a long command paused often would keep every one).
  const { setFlagsFromString } = await import("node:v8");
  const { runInNewContext } = await import("node:vm");
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  const proc = shell("sleep 30");
  const run = new CommandRun(proc, options);
  const refs: WeakRef<object>[] = [];
  for (let i = 0; i < 20; i++) {
    const held = { payload: Buffer.alloc(1024) };
    refs.push(new WeakRef(held));
    run.whenWritable(() => void held.payload.length);
    proc.stdin.emit("drain");
  }
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  const kept = refs.filter((r) => r.deref() !== undefined).length;
  run.kill();
  await run.done;
  assert.equal(kept, 0, `${kept} of 20 drained waits are still held`);
});
