/**
 * Test inputs made once per test run and shared by its files: `node --test` runs each file in a process
 * of its own, all children of the runner, so the runner's process (its pid and start time, which a
 * reused pid does not share) names the run. A file asking for something another file of the same run
 * is making waits for it instead of making its own. What a run made stays until a later run's first
 * file removes it (no file knows it is the run's last); HANGAR_E2E_KEEP=1 keeps them all.
 *
 * Only for inputs the tests read and never change (an image archive to import, not a data dir).
 */
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { mkdir, rename, rm, rmdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

const PREFIX = "hangar-test-run-";
/** How long a file waits for another one's build before making its own. */
const WAIT_FOR_OTHER_MS = 120_000;

/** A process's start time (clock ticks since boot, /proc/<pid>/stat field 22), or null if it is gone. */
function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
}

let runDir: string | undefined;

/** This run's directory (made on first use), after removing the directories of runs that have ended. */
async function thisRun(): Promise<string> {
  if (runDir) return runDir;
  const runner = process.ppid;
  const dir = join(tmpdir(), `${PREFIX}${runner}-${startTime(runner)}`);
  if (process.env.HANGAR_E2E_KEEP !== "1") {
    for (const name of readdirSync(tmpdir()).filter((n) => n.startsWith(PREFIX))) {
      const [pid, started] = name.slice(PREFIX.length).split("-");
      if (startTime(Number(pid)) !== started) rmSync(join(tmpdir(), name), { recursive: true, force: true });
    }
  }
  await mkdir(dir, { recursive: true });
  runDir = dir;
  return dir;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The directory `make` filled, made once per run under `name`: the first file to ask runs `make` into a
 * fresh directory and moves it into place whole; the others wait for it (if the maker dies first, they
 * make their own copy).
 */
export async function madeOncePerRun(name: string, make: (dir: string) => Promise<void>): Promise<string> {
  const run = await thisRun();
  const done = join(run, name);
  const lock = `${done}.making`;
  if (existsSync(done)) return done;
  const maker = await mkdir(lock).then(
    () => true,
    () => false,
  );
  if (!maker) {
    const deadline = Date.now() + WAIT_FOR_OTHER_MS;
    while (Date.now() < deadline) {
      if (existsSync(done)) return done;
      if (!existsSync(lock)) break; // the maker failed: make it here
      await sleep(100);
    }
    if (existsSync(done)) return done;
  }
  const work = join(run, `${name}.${process.pid}`);
  await rm(work, { recursive: true, force: true });
  await mkdir(work);
  try {
    await make(work);
    await rename(work, done).catch(async (err) => {
      // Another file made it meanwhile (it stopped waiting for a maker that died): theirs is as good.
      if (!existsSync(done)) throw err;
      await rm(work, { recursive: true, force: true });
    });
  } finally {
    if (maker) await rmdir(lock).catch(() => {});
  }
  return done;
}
