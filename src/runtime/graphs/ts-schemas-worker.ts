/**
 * A schema thread (`schemas.ts`): reads the schemas of the project's graph files from their TypeScript
 * source (one program for them all), posts each file's as it is had, then `done`, and is ended. It loads no
 * graph code, only the TypeScript compiler.
 */
import { parentPort, workerData } from "node:worker_threads";
import { extractAllStaticSchemas, type SourceFile } from "./ts-schemas.js";

const { files } = workerData as { files: SourceFile[] };
try {
  extractAllStaticSchemas(files, (file, outcome) => parentPort!.postMessage({ file, ...outcome }));
  parentPort!.postMessage({ done: true });
} catch (err) {
  parentPort!.postMessage({ done: true, error: (err as Error)?.message ?? String(err) });
}
