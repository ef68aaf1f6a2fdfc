#!/usr/bin/env node
// Hangar runs its own TypeScript sources, and users' .ts graph files, without a build step: import
// the packages a server loads anyway (preload.js says why), register tsx's ESM loader, then hand over to
// the CLI.
import v8 from "node:v8";
import { register } from "tsx/esm/api";
import { ADMIN_PACKAGES, HTTP_PACKAGES, preload, RUN_PACKAGES } from "./preload.js";

// An administration command is the first argument (src/cli/main.ts); any other starts a server.
const command = process.argv[2] ?? "";
await preload(
  Object.hasOwn(ADMIN_PACKAGES, command) ? ADMIN_PACKAGES[command] : [...RUN_PACKAGES, ...HTTP_PACKAGES],
);

// Node runs loader hooks on a thread of their own. While modules load, V8 grows that thread's young
// generation to its default (two 16 MB semi-spaces) and keeps it, though the thread has little to do
// once start-up is over: 13–15 MB of RSS, measured. V8 reads the semi-space flag when it creates an
// isolate, and `register()` returns once the hooks thread runs, so the flag is set to 1 MB around it and
// put back to V8's default (0) at once; no other thread exists yet. A size chosen for the whole process
// (node's flags or NODE_OPTIONS) is left alone. Executor threads register their own hooks thread and keep
// the default: setting the flag there could reach a sibling thread's isolate created meanwhile.
const SEMI_SPACE = "--max-semi-space-size";
const nodeFlags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)];
const chosen = nodeFlags.some((flag) => flag.replaceAll("_", "-").startsWith(SEMI_SPACE));
if (!chosen) v8.setFlagsFromString(`${SEMI_SPACE}=1`);
register();
if (!chosen) v8.setFlagsFromString(`${SEMI_SPACE}=0`);

const { main } = await import("../src/cli/main.ts");
await main(process.argv.slice(2));
