import type { Storage } from "../ports.js";
import { PgAssistants } from "../postgres/assistants.js";
import { PgAuth } from "../postgres/auth.js";
import { PgCheckpointer } from "../postgres/checkpointer.js";
import { PgCrons } from "../postgres/crons.js";
import { PgSandboxBoxes } from "../postgres/sandbox-boxes.js";
import { PgSandboxes } from "../postgres/sandboxes.js";
import { PgStore } from "../postgres/store.js";
import { SqliteAssistants } from "../sqlite/assistants.js";
import { SqliteAuth } from "../sqlite/auth.js";
import { SqliteCheckpointer } from "../sqlite/checkpointer.js";
import { SqliteCrons } from "../sqlite/crons.js";
import { SqliteSandboxBoxes } from "../sqlite/sandbox-boxes.js";
import { SqliteSandboxes } from "../sqlite/sandboxes.js";
import { SqliteStore } from "../sqlite/store.js";
import { openPostgres, openSqlite, type SqlDatabase } from "./database.js";
import { SqlRuns } from "./runs.js";
import { SqlThreads } from "./threads.js";

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
      threads: new SqlThreads(database),
      runs: new SqlRuns(database, checkpointer),
      sandboxes: new SqliteSandboxes(raw),
      sandboxBoxes: new SqliteSandboxBoxes(raw),
      checkpointer,
      auth: new SqliteAuth(raw),
      crons: new SqliteCrons(raw),
      store: new SqliteStore(raw),
      close: () => database.close(),
    };
  }
  const checkpointer = new PgCheckpointer(raw);
  return {
    exclusive: false,
    assistants: new PgAssistants(raw),
    threads: new SqlThreads(database),
    runs: new SqlRuns(database, checkpointer),
    sandboxes: new PgSandboxes(raw),
    sandboxBoxes: new PgSandboxBoxes(raw),
    checkpointer,
    auth: new PgAuth(raw),
    crons: new PgCrons(raw),
    store: new PgStore(raw),
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
