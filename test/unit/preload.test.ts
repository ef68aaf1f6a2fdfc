/**
 * bin/preload.js preloads the server's packages for every command but the administration ones, which it
 * names itself (plain JavaScript, it runs before the TypeScript loader): the same names as
 * src/cli/admin.ts'.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { ADMIN_COMMANDS } from "../../src/cli/admin.js";
import { REPO_ROOT } from "../helpers/server.js";

test("bin/preload.js preloads less for exactly the administration commands", async () => {
  const preloadJs = join(REPO_ROOT, "bin", "preload.js");
  const { ADMIN_PACKAGES } = (await import(preloadJs)) as { ADMIN_PACKAGES: Record<string, string[]> };
  assert.deepEqual(Object.keys(ADMIN_PACKAGES).sort(), Object.keys(ADMIN_COMMANDS).sort());
});
