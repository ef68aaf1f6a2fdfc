import type { Storage } from "../ports.js";
import { PgCheckpointer } from "../postgres/checkpointer.js";
import { PgRuns } from "../postgres/runs.js";
import { PgThreads } from "../postgres/threads.js";
import { SqliteCheckpointer } from "../sqlite/checkpointer.js";
import { SqliteRuns } from "../sqlite/runs.js";
import { SqliteThreads } from "../sqlite/threads.js";
import { SqlAssistants } from "./assistants.js";
import { SqlAuth } from "./auth.js";
import { SqlCheckpointer } from "./checkpointer.js";
import { SqlCrons } from "./crons.js";
import { openPostgres, openSqlite, type SqlDatabase } from "./database.js";
import { SqlSandboxBoxes } from "./sandbox-boxes.js";
import { SqlSandboxes } from "./sandboxes.js";
import { SqlStore } from "./store.js";

export { migrate } from "./migrations.js";

/** The storage port over one SQL database, either engine (database.ts). */
function storageOver(database: SqlDatabase): Storage {
  // TRANSITION (issue 18): each repository below moves to one implementation over `database`.
  const raw = database.legacy;
  const checkpointer = new SqlCheckpointer(database);
  if (database.dialect.name === "sqlite") {
    const legacyCheckpointer = fencingOn(checkpointer, new SqliteCheckpointer(raw));
    return {
      exclusive: true,
      assistants: new SqlAssistants(database),
      threads: new SqliteThreads(raw, legacyCheckpointer),
      runs: new SqliteRuns(raw, legacyCheckpointer),
      sandboxes: new SqlSandboxes(database),
      sandboxBoxes: new SqlSandboxBoxes(database),
      checkpointer,
      auth: new SqlAuth(database),
      crons: new SqlCrons(database),
      store: new SqlStore(database),
      close: () => database.close(),
    };
  }
  const legacyCheckpointer = fencingOn(checkpointer, new PgCheckpointer(raw));
  return {
    exclusive: false,
    assistants: new SqlAssistants(database),
    threads: new PgThreads(raw, legacyCheckpointer),
    runs: new PgRuns(raw, legacyCheckpointer),
    sandboxes: new SqlSandboxes(database),
    sandboxBoxes: new SqlSandboxBoxes(database),
    checkpointer,
    auth: new SqlAuth(database),
    crons: new SqlCrons(database),
    store: new SqlStore(database),
    close: () => database.close(),
  };
}

/**
 * TRANSITION (issue 18): the per-engine runs and threads delete a run's checkpoints and copy a thread's
 * inside their own (synchronous SQLite, client-bound Postgres) transactions through a legacy
 * checkpointer; its `deleteRun` fences the run on the server's checkpointer, the one graphs write
 * through. Goes when runs and threads call checkpoint-rows.ts.
 */
function fencingOn<T extends { fenceRun(runId: string): void }>(checkpointer: SqlCheckpointer, legacy: T): T {
  legacy.fenceRun = (runId) => checkpointer.fenceRun(runId);
  return legacy;
}

/**
 * Embedded storage: one SQLite file (`<dataDir>/hangar.sqlite`) holding everything, checkpoints included.
 * `secondary`: another connection of the process that owns the file (an executor thread).
 */
export async function openSqliteStorage(opts: {
  dataDir: string;
  synchronous: "normal" | "full";
  secondary?: boolean;
}): Promise<Storage> {
  return storageOver(await openSqlite(opts));
}

/**
 * Scale-out storage: everything, checkpoints and the store included, in one Postgres schema
 * (`public` unless `schema` is given). Migrations run on open, once across processes starting at once.
 */
export async function openPostgresStorage(opts: {
  uri: string;
  schema?: string;
  max?: number;
}): Promise<Storage> {
  return storageOver(await openPostgres(opts));
}
