/**
 * Records what the reference JS Agent Server (@langchain/langgraph-api 2.0.0, bench/reference) streams
 * for every case of test/e2e/fixtures/streams/cases.ts, into
 * test/e2e/fixtures/streams/reference-streams.json, which test/e2e/stream-modes.test.ts compares
 * Hangar's streams with. Run it again only when the cases or the fixture graphs change:
 *
 *   node --import tsx scripts/record-reference-streams.ts
 *
 * REFERENCE_DIR: a folder like bench/reference with its node_modules installed (default
 * bench/reference; `npm run bench` installs it). The server listens on 127.0.0.1 on a free port.
 *
 * The reference's server code runs the fixture graphs with the LangGraph and LangChain copies Hangar
 * uses (this repository's node_modules; the reference accepts any @langchain/langgraph 1.x), so the
 * recording differs from Hangar's streams only where the servers differ, not where library versions do.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Client } from "@langchain/langgraph-sdk";
import { CASES, type RecordedEvent, runCase } from "../test/e2e/fixtures/streams/cases.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const FIXTURE = path.join(ROOT, "test", "e2e", "fixtures", "streams");
const REFERENCE_DIR = path.resolve(process.env.REFERENCE_DIR ?? path.join(ROOT, "bench", "reference"));
const OUT = path.join(FIXTURE, "reference-streams.json");

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const API = path.join(REFERENCE_DIR, "node_modules", "@langchain", "langgraph-api");

/** The child process: the reference server on the fixture's graphs (`--serve <port> <state dir>`). */
async function serve(port: number, stateDir: string): Promise<void> {
  const config = JSON.parse(readFileSync(path.join(FIXTURE, "langgraph.json"), "utf8")) as {
    graphs: Record<string, string>;
  };
  const graphs = Object.fromEntries(
    Object.entries(config.graphs).map(([id, spec]) => {
      const [file, name] = spec.split(":");
      return [id, `${path.resolve(FIXTURE, file!)}:${name}`];
    }),
  );
  const { startServer } = await import(pathToFileURL(path.join(API, "dist", "server.mjs")).href);
  await startServer({ port, host: "127.0.0.1", nWorkers: 2, cwd: stateDir, graphs });
  process.stdout.write(`reference listening on http://127.0.0.1:${port}\n`);
}

async function startReference(stateDir: string): Promise<{ url: string; child: ChildProcess }> {
  if (!existsSync(API)) {
    throw new Error(
      `no reference server installed in ${REFERENCE_DIR} (run \`npm run bench\` once, or set REFERENCE_DIR)`,
    );
  }
  const port = await freePort();
  const child = spawn(
    process.execPath,
    ["--import", "tsx", fileURLToPath(import.meta.url), "--serve", String(port), stateDir],
    {
      cwd: ROOT,
      env: { ...process.env, LANGCHAIN_TRACING_V2: "false", LANGSMITH_TRACING: "false" },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (chunk: Buffer) => /reference listening/.test(String(chunk)) && resolve());
    child.once("exit", (code) => reject(new Error(`the reference server exited (${code})`)));
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

const version = (dir: string, pkg: string) =>
  JSON.parse(readFileSync(path.join(dir, "node_modules", pkg, "package.json"), "utf8")).version;

async function record(): Promise<void> {
  const stateDir = mkdtempSync(path.join(tmpdir(), "ref-streams-"));
  const reference = await startReference(stateDir);
  try {
    const client = new Client({ apiUrl: reference.url });
    const cases: Record<string, RecordedEvent[][]> = {};
    for (const c of CASES) {
      cases[c.name] = await runCase(client, c);
      console.log(`${c.name}: ${cases[c.name]!.map((events) => events.length).join(" + ")} events`);
    }
    const recording = {
      recorded_with: {
        "@langchain/langgraph-api": version(REFERENCE_DIR, "@langchain/langgraph-api"),
        "@langchain/langgraph": version(ROOT, "@langchain/langgraph"),
        "@langchain/core": version(ROOT, "@langchain/core"),
      },
      cases,
    };
    writeFileSync(OUT, `${JSON.stringify(recording, null, 1)}\n`);
    console.log(`wrote ${path.relative(ROOT, OUT)}`);
  } finally {
    reference.child.kill("SIGTERM");
    await new Promise((r) => reference.child.once("exit", r));
    rmSync(stateDir, { recursive: true, force: true });
  }
}

const serveAt = process.argv.indexOf("--serve");
if (serveAt >= 0) await serve(Number(process.argv[serveAt + 1]), process.argv[serveAt + 2]!);
else await record();
