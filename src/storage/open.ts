import type { Config } from "../config/index.js";
import type { Storage } from "./ports.js";
import { openPostgresStorage, openSqliteStorage } from "./sql/index.js";

/**
 * The storage a config names: Postgres with `postgresUri`, else the SQLite file in `dataDir`.
 * `secondary`: an executor thread's connection beside the process's own (see openSqliteStorage).
 */
export async function openStorage(config: Config, opts: { secondary?: boolean } = {}): Promise<Storage> {
  return config.postgresUri
    ? openPostgresStorage({ uri: config.postgresUri })
    : openSqliteStorage({ dataDir: config.dataDir, synchronous: config.sqliteSynchronous, ...opts });
}
