/** `hangar images …` as a user runs it, on a test server's data dir; image stores for tests. */
import { execFile } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { type Hangar, REPO_ROOT, tempDir } from "./server.js";

const run = promisify(execFile);

/** Runs `hangar images <args> --data-dir <h's>`: its exit code, stdout and stderr. */
export async function images(h: Hangar, ...args: string[]) {
  const cli = join(REPO_ROOT, "bin", "hangar.js");
  return run(process.execPath, [cli, "images", ...args, "--data-dir", h.dataDir]).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err) => ({ code: err.code as number, stdout: err.stdout as string, stderr: err.stderr as string }),
  );
}

/**
 * An image store (`HANGAR_SANDBOX_IMAGES`) holding the named images as empty root filesystem
 * directories: enough for templates to name them, for tests where no sandbox boots.
 */
export async function emptyImageStore(names: string[]): Promise<string> {
  const dir = await tempDir("hangar-images-");
  for (const name of names) await mkdir(join(dir, name));
  return dir;
}
