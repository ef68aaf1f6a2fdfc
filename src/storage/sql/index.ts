import type { Storage } from "../ports.js";
import { SqlAssistants } from "./assistants.js";
import { SqlAuth } from "./auth.js";
import { SqlCheckpointer } from "./checkpointer.js";
import { SqlCrons } from "./crons.js";
import { openPostgres, openSqlite, type SqlDatabase } from "./database.js";
import { SqlRuns } from "./runs.js";
import { SqlSandboxBoxes, SqlSandboxes } from "./sandboxes.js";
import { SqlStore } from "./store.js";
import { SqlThreads } from "./threads.js";

/** The storage port over one SQL database, either engine (database.ts). */
function storageOver(database: SqlDatabase): Storage {
  const checkpointer = new SqlCheckpointer(database);
  return {
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

/** Embedded storage (database.ts' `openSqlite`): everything, checkpoints included, in one SQLite file. */
export async function openSqliteStorage(opts: Parameters<typeof openSqlite>[0]): Promise<Storage> {
  return storageOver(await openSqlite(opts));
}

/** Scale-out storage (database.ts' `openPostgres`): everything in one Postgres schema. */
export async function openPostgresStorage(opts: Parameters<typeof openPostgres>[0]): Promise<Storage> {
  return storageOver(await openPostgres(opts));
}
