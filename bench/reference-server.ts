/**
 * Starts the reference JS Agent Server (bench/reference/start.ts) on a project's langgraph.json, on
 * 127.0.0.1 and a free port, for the scripts that compare Hangar with it or record its answers.
 * REFERENCE_DIR: where the reference is installed (default bench/reference; `npm run bench` installs it).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const REFERENCE_DIR = path.resolve(
  process.env.REFERENCE_DIR ?? path.join(path.dirname(fileURLToPath(import.meta.url)), "reference"),
);

export interface ReferenceServer {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** A port nothing listens on now, on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once `child` prints the "reference listening" line; rejects if it exits first. */
export function listening(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (chunk: Buffer) => /reference listening/.test(String(chunk)) && resolve());
    child.once("exit", (code) =>
      reject(new Error(`the reference server exited (${code}); run \`npm run bench\` once to install it`)),
    );
  });
}

export async function startReference(opts: {
  /** The project's langgraph.json. */
  config: string;
  /** Show the server's own log (stderr); default quiet. */
  logs?: boolean;
}): Promise<ReferenceServer> {
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", "start.ts"], {
    cwd: REFERENCE_DIR,
    env: {
      ...process.env,
      PORT: String(port),
      STATE_DIR: mkdtempSync(path.join(tmpdir(), "reference-state-")),
      CONFIG: opts.config,
      LANGSMITH_TRACING: "false",
      LANGCHAIN_TRACING_V2: "false",
    },
    stdio: ["ignore", "pipe", opts.logs ? "inherit" : "ignore"],
  });
  await listening(child);
  return {
    url: `http://127.0.0.1:${port}`,
    child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      await new Promise((resolve) => child.once("exit", resolve));
    },
  };
}
