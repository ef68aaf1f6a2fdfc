// The entry of an executor thread (src/runtime/runs/executor-pool.ts). Worker threads do not inherit the
// TypeScript loader the main thread registered: import the packages it loads anyway (preload.js),
// register the loader here, then load the thread's module.
import { register } from "tsx/esm/api";
import { preload, RUN_PACKAGES } from "./preload.js";

await preload(RUN_PACKAGES);
register();
await import("../src/runtime/runs/executor-worker.ts");
