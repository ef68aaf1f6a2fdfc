import type { Storage } from "../ports.js";
import { PgAssistants } from "../postgres/assistants.js";
import { PgAuth } from "../postgres/auth.js";
import { PgCheckpointer } from "../postgres/checkpointer.js";
import { PgCrons } from "../postgres/crons.js";
import { PgRuns } from "../postgres/runs.js";
import { PgThreads } from "../postgres/threads.js";
import { SqliteAssistants } from "../sqlite/assistants.js";
import { SqliteAuth } from "../sqlite/auth.js";
import { SqliteCheckpointer } from "../sqlite/checkpointer.js";
import { SqliteCrons } from "../sqlite/crons.js";
import { SqliteRuns } from "../sqlite/runs.js";
import { SqliteThreads } from "../sqlite/threads.js";
import { openPostgres, openSqlite, type SqlDatabase } from "./database.js";
import { SqlSandboxBoxes } from "./sandbox-boxes.js";
import { SqlSandboxes } from "./sandboxes.js";
import { SqlStore } from "./store.js";

export { migrate } from "./migrations.js";

/** The storage port over one SQL database, either engine (database.ts). */
function storageOver(database: SqlDatabase): Storage {
  // TRANSITION (issue 18): each repository below moves to one implementation over `database`.
  const raw = database.legacy;
  if (database.dialect.name === "sqlite") {
    const checkpointer = new SqliteCheckpointer(raw);
    return {
      exclusive: true,
      assistants: new SqliteAssistants(raw),
      threads: new SqliteThreads(raw, checkpointer),
      runs: new SqliteRuns(raw, checkpointer),
      sandboxes: new SqlSandboxes(database),
      sandboxBoxes: new SqlSandboxBoxes(database),
      checkpointer,
      auth: new SqliteAuth(raw),
      crons: new SqliteCrons(raw),
      store: new SqlStore(database),
      close: () => database.close(),
    };
  }
  const checkpointer = new PgCheckpointer(raw);
  return {
    exclusive: false,
    assistants: new PgAssistants(raw),
    threads: new PgThreads(raw, checkpointer),
    runs: new PgRuns(raw, checkpointer),
    sandboxes: new SqlSandboxes(database),
    sandboxBoxes: new SqlSandboxBoxes(database),
    checkpointer,
    auth: new PgAuth(raw),
    crons: new PgCrons(raw),
    store: new SqlStore(database),
    close: () => database.close(),
  };
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
