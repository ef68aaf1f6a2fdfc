import type { Storage } from "../ports.js";
import { PgAssistants } from "./assistants.js";
import { PgAuth } from "./auth.js";
import { PgCheckpointer } from "./checkpointer.js";
import { PgCrons } from "./crons.js";
import { openDatabase } from "./database.js";
import { PgRuns } from "./runs.js";
import { PgSandboxBoxes } from "./sandbox-boxes.js";
import { PgSandboxes } from "./sandboxes.js";
import { PgStore } from "./store.js";
import { PgThreads } from "./threads.js";

export { runMigrations } from "./database.js";

/**
 * Scale-out storage: everything, checkpoints and the store included, in one Postgres schema
 * (`public` unless `schema` is given). Migrations run on open, once across processes starting at once.
 */
export async function openPostgresStorage(opts: {
  uri: string;
  schema?: string;
  max?: number;
}): Promise<Storage> {
  const db = await openDatabase(opts);
  const checkpointer = new PgCheckpointer(db);
  return {
    exclusive: false,
    assistants: new PgAssistants(db),
    threads: new PgThreads(db, checkpointer),
    runs: new PgRuns(db, checkpointer),
    sandboxes: new PgSandboxes(db),
    sandboxBoxes: new PgSandboxBoxes(db),
    checkpointer,
    auth: new PgAuth(db),
    crons: new PgCrons(db),
    store: new PgStore(db),
    async close() {
      await db.pool.end();
    },
  };
}
