import type { Storage } from "../ports.js";
import { SqliteAssistants } from "./assistants.js";
import { SqliteAuth } from "./auth.js";
import { SqliteCheckpointer } from "./checkpointer.js";
import { SqliteCrons } from "./crons.js";
import { openDatabase } from "./database.js";
import { SqliteRuns } from "./runs.js";
import { SqliteSandboxBoxes } from "./sandbox-boxes.js";
import { SqliteSandboxes } from "./sandboxes.js";
import { SqliteStore } from "./store.js";
import { SqliteThreads } from "./threads.js";

/**
 * Embedded storage: one SQLite file (`<dataDir>/hangar.sqlite`) holding everything, checkpoints included.
 * `secondary`: another connection of the process that owns the file (an executor thread); it leaves
 * folding the WAL back at close to the owner.
 */
export function openSqliteStorage(opts: {
  dataDir: string;
  synchronous: "normal" | "full";
  secondary?: boolean;
}): Storage {
  const db = openDatabase(opts.dataDir, opts.synchronous);
  const checkpointer = new SqliteCheckpointer(db);
  return {
    exclusive: true,
    assistants: new SqliteAssistants(db),
    threads: new SqliteThreads(db, checkpointer),
    runs: new SqliteRuns(db, checkpointer),
    sandboxes: new SqliteSandboxes(db),
    sandboxBoxes: new SqliteSandboxBoxes(db),
    checkpointer,
    auth: new SqliteAuth(db),
    crons: new SqliteCrons(db),
    store: new SqliteStore(db),
    async close() {
      // Fold the WAL back into the main file so the data dir is one self-contained file at rest.
      if (!opts.secondary) db.pragma("wal_checkpoint(TRUNCATE)");
      db.close();
    },
  };
}
