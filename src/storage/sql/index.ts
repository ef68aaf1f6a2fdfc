import type { Storage } from "../ports.js";
import { SqlAssistants } from "./assistants.js";
import { SqlAuth } from "./auth.js";
import { SqlCheckpointer } from "./checkpointer.js";
import { SqlCrons } from "./crons.js";
import { openPostgres, openSqlite, type SqlDatabase } from "./database.js";
import { SqlRuns } from "./runs.js";
import { SqlSandboxBoxes } from "./sandbox-boxes.js";
import { SqlSandboxes } from "./sandboxes.js";
import { SqlStore } from "./store.js";
import { SqlThreads } from "./threads.js";

/** The storage port over one SQL database, either engine (database.ts). */
function storageOver(database: SqlDatabase): Storage {
  const checkpointer = new SqlCheckpointer(database);
  return {
    // Embedded SQLite is one process's file: runs it finds `running` at start are orphans.
    exclusive: database.dialect.name === "sqlite",
    assistants: new SqlAssistants(database),
    threads: new SqlThreads(database),
    runs: new SqlRuns(database, checkpointer),
    checkpointer,
    sandboxes: new SqlSandboxes(database),
    sandboxBoxes: new SqlSandboxBoxes(database),
    auth: new SqlAuth(database),
    crons: new SqlCrons(database),
    store: new SqlStore(database),
    close: () => database.close(),
  };
}

/**
 * Embedded storage: one SQLite file (`<dataDir>/hangar.sqlite`) holding everything, checkpoints included.
 * `secondary`: another connection of the process that owns the file (an executor thread).
 */
export async function openSqliteStorage(opts: Parameters<typeof openSqlite>[0]): Promise<Storage> {
  return storageOver(await openSqlite(opts));
}

/**
 * Scale-out storage: everything, checkpoints and the store included, in one Postgres schema
 * (`public` unless `schema` is given). Migrations run on open, once across processes starting at once.
 */
export async function openPostgresStorage(opts: Parameters<typeof openPostgres>[0]): Promise<Storage> {
  return storageOver(await openPostgres(opts));
}
