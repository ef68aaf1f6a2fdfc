import type { Storage } from "../ports.js";
import { SqlAssistants } from "./assistants.js";
import { SqlAuth } from "./auth.js";
import { SqlCheckpointer } from "./checkpointer.js";
import { SqlCrons } from "./crons.js";
import { openPostgres, openSqlite, type SqlDatabase } from "./database.js";
import { SqlRuns } from "./runs/index.js";
import { SqlSandboxBoxes } from "./sandboxes/boxes.js";
import { SqlSandboxes } from "./sandboxes/volumes-templates.js";
import { SqlStore } from "./store.js";
import { SqlThreadEvents } from "./thread-events.js";
import { SqlThreads } from "./threads.js";

/** The storage port over one SQL database, either engine (database.ts). */
function storageOver(database: SqlDatabase): Storage {
  const checkpointer = new SqlCheckpointer(database);
  return {
    exclusive: database.dialect.exclusive,
    assistants: new SqlAssistants(database),
    threads: new SqlThreads(database),
    runs: new SqlRuns(database, checkpointer),
    checkpointer,
    sandboxes: new SqlSandboxes(database),
    sandboxBoxes: new SqlSandboxBoxes(database),
    auth: new SqlAuth(database),
    crons: new SqlCrons(database),
    store: new SqlStore(database),
    threadEvents: new SqlThreadEvents(database),
    close: () => database.close(),
  };
}

/** Embedded storage (database.ts' `openSqlite`): everything, checkpoints included, in one SQLite file. */
export const openSqliteStorage = async (opts: Parameters<typeof openSqlite>[0]) =>
  storageOver(await openSqlite(opts));

/** Scale-out storage (database.ts' `openPostgres`): everything in one Postgres schema. */
export const openPostgresStorage = async (opts: Parameters<typeof openPostgres>[0]) =>
  storageOver(await openPostgres(opts));

/** What `openStorage` reads of the server's settings (a `Config` is one). */
export interface StorageSettings {
  postgresUri?: string;
  dataDir: string;
  sqliteSynchronous: "normal" | "full";
}

/** The storage the settings name: Postgres with `postgresUri`, else SQLite (`secondary`: see openSqlite). */
export const openStorage = (config: StorageSettings, opts: { secondary?: boolean } = {}): Promise<Storage> =>
  config.postgresUri
    ? openPostgresStorage({ uri: config.postgresUri })
    : openSqliteStorage({ dataDir: config.dataDir, synchronous: config.sqliteSynchronous, ...opts });
