/**
 * Records the reference server's answers for the schemas fixture (test/e2e/fixtures/schemas): for each
 * graph, `GET /assistants/{graph}/schemas`, `/subgraphs?recurse=true` and `/graph?xray=true`, written to
 * test/e2e/fixtures/schemas/reference.json, which test/e2e/schemas.test.ts compares Hangar with.
 *
 *   node --import tsx bench/record-schemas.ts
 *
 * REFERENCE_DIR: where the reference is installed (default bench/reference; `npm run bench` installs it).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const BENCH = path.dirname(fileURLToPath(import.meta.url));
const FIXTURE = path.join(BENCH, "..", "test", "e2e", "fixtures", "schemas");
const CONFIG = path.join(FIXTURE, "langgraph.json");
const GRAPHS = Object.keys(JSON.parse(readFileSync(CONFIG, "utf8")).graphs);

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

const port = await freePort();
const child = spawn(process.execPath, ["--import", "tsx", "start.ts"], {
  cwd: process.env.REFERENCE_DIR ?? path.join(BENCH, "reference"),
  env: {
    ...process.env,
    PORT: String(port),
    STATE_DIR: mkdtempSync(path.join(tmpdir(), "ref-schemas-")),
    CONFIG,
  },
  stdio: ["ignore", "pipe", "inherit"],
});
await new Promise<void>((resolve, reject) => {
  child.stdout!.on("data", (chunk: Buffer) => /reference listening/.test(String(chunk)) && resolve());
  child.once("exit", () =>
    reject(new Error("the reference server exited; run `npm run bench` once to install it")),
  );
});
const base = `http://127.0.0.1:${port}`;
const get = async (url: string) => {
  const res = await fetch(base + url);
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  return res.json();
};
try {
  const recorded: Record<string, unknown> = {};
  for (const graph of GRAPHS) {
    const started = Date.now();
    const schemas = await get(`/assistants/${graph}/schemas`);
    console.log(`${graph}: schemas in ${Date.now() - started} ms`);
    recorded[graph] = {
      schemas,
      subgraphs: await get(`/assistants/${graph}/subgraphs?recurse=true`),
      graph: await get(`/assistants/${graph}/graph?xray=true`),
    };
  }
  const out = path.join(FIXTURE, "reference.json");
  writeFileSync(out, `${JSON.stringify(recorded, null, 2)}\n`);
  console.log(`wrote ${out}`);
} finally {
  child.kill("SIGTERM");
}
