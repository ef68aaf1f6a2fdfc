/**
 * Records what the reference JS Agent Server (@langchain/langgraph-api 1.5.1, the newest release that
 * serves the thread-centric protocol) sends for test/e2e/fixtures/protocol-clients/scenario.ts on the fixture
 * graph, into test/e2e/fixtures/protocol-clients/reference-events.json, which
 * test/e2e/protocol-reference.test.ts compares Hangar with. Run it again only when the scenario or the
 * graph changes:
 *
 *   cd scripts/protocol-reference && npm install && npm run record
 *
 * The server runs in a child process (`--serve <port> <state dir>`) on 127.0.0.1, with the graph's
 * `@langchain/*` imports resolved from this folder (hooks.mjs); this folder pins the same LangGraph and
 * LangChain releases as Hangar's package.json, so the recording differs from Hangar only where the
 * servers do.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { register } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const FIXTURE = path.resolve(here, "..", "..", "test", "e2e", "fixtures", "protocol-clients");
const OUT = path.join(FIXTURE, "reference-events.json");

async function serve(port: number, stateDir: string): Promise<void> {
  register("./hooks.mjs", import.meta.url, {
    data: { fixtureURL: pathToFileURL(FIXTURE + path.sep).href, parentURL: import.meta.url },
  });
  const config = JSON.parse(readFileSync(path.join(FIXTURE, "langgraph.json"), "utf8")) as {
    graphs: Record<string, string>;
  };
  const graphs = Object.fromEntries(
    Object.entries(config.graphs).map(([id, spec]) => {
      const [file, name] = spec.split(":");
      return [id, `${path.resolve(FIXTURE, file!)}:${name}`];
    }),
  );
  const { startServer } = await import("@langchain/langgraph-api/server");
  await startServer({ port, host: "127.0.0.1", nWorkers: 2, cwd: stateDir, graphs });
  process.stdout.write(`reference listening on http://127.0.0.1:${port}\n`);
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function record(): Promise<void> {
  const port = await freePort();
  const stateDir = mkdtempSync(path.join(tmpdir(), "protocol-reference-"));
  const child = spawn(process.execPath, ["--import", "tsx", "record.ts", "--serve", String(port), stateDir], {
    cwd: here,
    env: { ...process.env, LANGSMITH_TRACING: "false", LANGCHAIN_TRACING_V2: "false" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", (chunk: Buffer) => /reference listening/.test(String(chunk)) && resolve());
      child.once("exit", (code) => reject(new Error(`the reference server exited (${code})`)));
    });
    const { runScenario } = await import(pathToFileURL(path.join(FIXTURE, "scenario.ts")).href);
    const recording = await runScenario(`http://127.0.0.1:${port}`);
    const api = JSON.parse(
      readFileSync(path.join(here, "node_modules", "@langchain", "langgraph-api", "package.json"), "utf8"),
    ) as { version: string };
    writeFileSync(
      OUT,
      `${JSON.stringify({ server: `@langchain/langgraph-api ${api.version}`, ...recording }, null, 2)}\n`,
    );
    process.stdout.write(`recorded ${recording.events.length} events into ${OUT}\n`);
  } finally {
    child.kill("SIGTERM");
    rmSync(stateDir, { recursive: true, force: true });
  }
}

if (process.argv[2] === "--serve") await serve(Number(process.argv[3]), process.argv[4]!);
else await record();
