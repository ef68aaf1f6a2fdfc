// The entry of an executor thread (src/runtime/executor-threads.ts). Worker threads do not inherit the
// TypeScript loader the main thread registered: register it here, then load the thread's module.
import { register } from "tsx/esm/api";

register();
await import("../src/runtime/executor-thread.ts");
