/**
 * Sandbox bench: create-to-ready time (cold, and claimed from a pool) and the `echo` round trip (over
 * the WebSocket and over HTTP), through the official client (`langsmith` 0.5.21), against a fresh
 * Hangar on a free 127.0.0.1 port with a fresh data dir, once per isolation engine on the machine
 * (gVisor's runsc, runc, bubblewrap). Needs root and the engines' tools, like the driver.
 *
 *   node --import tsx bench/sandboxes.ts                 # 20 creates per kind, 200 echoes per transport
 *   node --import tsx bench/sandboxes.ts --quick         # 5 and 30
 *   node --import tsx bench/sandboxes.ts --engine bwrap  # one engine only
 *
 * Prints a markdown table (milliseconds); bench/SANDBOX-RESULTS.md keeps the last one written down.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { SandboxClient } from "langsmith-sbx/experimental/sandbox";
import { onPath } from "../src/sandboxes/engines/host-driver.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const quick = process.argv.includes("--quick");
const CREATES = quick ? 5 : 20;
const ECHOES = quick ? 30 : 200;
const ENGINES = ["runsc", "runc", "bwrap"] as const;
const engineArg = process.argv.indexOf("--engine");
const engines = engineArg > 0 ? [process.argv[engineArg + 1]!] : ENGINES.filter((e) => onPath(e));

async function startServer(dataDir: string, engine: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    [
      path.join(ROOT, "bin", "hangar.js"),
      "dev",
      "--config",
      path.join(ROOT, "examples", "langgraph.json"),
      "--port",
      "0",
      "--host",
      "127.0.0.1",
      "--data-dir",
      dataDir,
    ],
    {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "inherit"],
      env: { ...process.env, LANGSMITH_TRACING: "false", HANGAR_SANDBOX_ENGINE: engine },
    },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) resolve(match[1]!.replace(/\/+$/, ""));
    });
    child.once("exit", (code) => reject(new Error(`hangar exited (${code}) before listening:\n${out}`)));
  });
  child.stdout!.resume();
  return { url, child };
}

function summary(engine: string, name: string, samples: number[]): string {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  const f = (n: number) => n.toFixed(1);
  return `| ${engine} | ${name} | ${s.length} | ${f(at(0.5))} | ${f(at(0.9))} | ${f(s[s.length - 1]!)} | ${f(mean)} |`;
}

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t = performance.now();
  const value = await fn();
  return [performance.now() - t, value];
}

async function bench(engine: string, rows: string[]) {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "hangar-bench-sbx-"));
  const { url, child } = await startServer(dataDir, engine);
  try {
    const c = new SandboxClient({ apiEndpoint: `${url}/v2/sandboxes`, apiKey: "bench", maxRetries: 0 });
    await c.createTemplate("bench", { image: "hangar/host" });
    await c.createTemplate("pooled", { image: "hangar/host" });

    const cold: number[] = [];
    for (let i = 0; i < CREATES; i++) {
      const [ms, box] = await timed(() => c.createSandbox("bench", { name: `cold-${i}`, timeout: 60 }));
      cold.push(ms);
      await c.deleteSandbox(box.name);
    }
    rows.push(summary(engine, "create → ready (cold boot)", cold));

    await c.createPool("warm", { templateName: "pooled", replicas: 2, timeout: 60 });
    const warm: number[] = [];
    for (let i = 0; i < CREATES; i++) {
      const [ms, box] = await timed(() => c.createSandbox("pooled", { name: `warm-${i}`, timeout: 60 }));
      warm.push(ms);
      await c.deleteSandbox(box.name);
      // Let the pool boot the replacement before the next claim.
      await new Promise((r) => setTimeout(r, 400));
    }
    rows.push(summary(engine, "create → ready (claimed from a pool)", warm));

    const box = await c.createSandbox("bench", { name: "echo", timeout: 60 });
    await box.run("echo warmup");
    const ws: number[] = [];
    for (let i = 0; i < ECHOES; i++) ws.push((await timed(() => box.run("echo hi")))[0]);
    rows.push(summary(engine, "`echo hi` round trip, WebSocket", ws));
    const httpSamples: number[] = [];
    for (let i = 0; i < ECHOES; i++) {
      const [ms] = await timed(async () => {
        const res = await fetch(`${box.dataplane_url}/execute`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": "bench" },
          body: JSON.stringify({ command: "echo hi" }),
        });
        if ((await res.json()).stdout !== "hi\n") throw new Error("unexpected output");
      });
      httpSamples.push(ms);
    }
    rows.push(summary(engine, "`echo hi` round trip, HTTP POST /execute", httpSamples));
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main() {
  const rows: string[] = [];
  for (const engine of engines) await bench(engine, rows);
  const cpus = os.cpus();
  process.stdout.write(
    [
      `Sandboxes, ${new Date().toISOString()}, ${cpus.length} × ${cpus[0]?.model ?? "cpu"}, node ${process.version}`,
      "",
      "| engine | figure (ms) | n | median | p90 | max | mean |",
      "| --- | --- | --- | --- | --- | --- | --- |",
      ...rows,
      "",
    ].join("\n"),
  );
}

await main();
