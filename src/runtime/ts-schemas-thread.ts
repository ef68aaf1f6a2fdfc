/**
 * A schema thread (`graph-schemas.ts`): reads the schemas of one file's graphs from its TypeScript source, posts
 * them, and is ended. It loads no graph code, only the TypeScript compiler.
 */
import { parentPort, workerData } from "node:worker_threads";
import { extractStaticSchemas } from "./ts-schemas.js";

const { file, exportNames } = workerData as { file: string; exportNames: string[] };
try {
  parentPort!.postMessage({ ok: true, schemas: extractStaticSchemas(file, exportNames) });
} catch (err) {
  parentPort!.postMessage({ ok: false, error: (err as Error)?.message ?? String(err) });
}
