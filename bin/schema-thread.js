// The entry of a schema thread (src/runtime/graphs/schemas.ts): register the TypeScript loader, as for
// executor threads, then load the thread's module.
import { register } from "tsx/esm/api";

register();
await import("../src/runtime/graphs/ts-schemas-worker.ts");
