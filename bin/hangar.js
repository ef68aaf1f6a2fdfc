#!/usr/bin/env node
// Hangar runs its own TypeScript sources, and users' .ts graph files, without a build step:
// register tsx's ESM loader first, then hand over to the CLI.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli/main.ts");
await main(process.argv.slice(2));
