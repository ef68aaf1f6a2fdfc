/**
 * One scale-out deployment for the e2e tests (test/e2e/scale-out*.test.ts): 2 API processes
 * (`serve --no-workers`) + 2 worker processes (`hangar worker`) on a fresh Postgres database and a Redis
 * key prefix of their own, with short leases (HANGAR_LEASE_SECONDS=2) so a killed worker's run is
 * recovered within seconds. Needs HANGAR_TEST_POSTGRES_URI and HANGAR_TEST_REDIS_URI (CI sets both).
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { type FreshDatabase, freshDatabase } from "./postgres.js";
import { type Hangar, startHangar } from "./server.js";

const PG_URI = process.env.HANGAR_TEST_POSTGRES_URI;
export const REDIS_URI = process.env.HANGAR_TEST_REDIS_URI;
export const SKIP =
  PG_URI && REDIS_URI
    ? undefined
    : "HANGAR_TEST_POSTGRES_URI and HANGAR_TEST_REDIS_URI are not both set (CI sets them)";

/** One deployment: a fresh database and Redis prefix shared by every process started from it. */
export class Cluster {
  readonly apis: Hangar[] = [];
  readonly workers: Hangar[] = [];
  #db: FreshDatabase | undefined;
  readonly #prefix = `hangar-e2e-${randomBytes(5).toString("hex")}:`;

  /** `config`: the langgraph.json every process serves (default: the examples'); `env`: more environment. */
  constructor(private readonly opts: { config?: string; env?: Record<string, string> } = {}) {}

  get uri(): string {
    if (!this.#db) throw new Error("create() the cluster first");
    return this.#db.uri;
  }

  async create(): Promise<this> {
    this.#db = await freshDatabase();
    return this;
  }

  #start(command: "serve" | "worker"): Promise<Hangar> {
    return startHangar({
      command,
      ...(this.opts.config && { config: this.opts.config }),
      args: command === "serve" ? ["--no-workers"] : ["--workers", "8"],
      env: {
        POSTGRES_URI: this.uri,
        REDIS_URI: REDIS_URI as string,
        HANGAR_REDIS_PREFIX: this.#prefix,
        HANGAR_LEASE_SECONDS: "2",
        HANGAR_LOG_LEVEL: "info",
        ...this.opts.env,
      },
    });
  }

  /** Starts what is missing of 2 API + 2 worker processes (the API processes first: they migrate). */
  async up(): Promise<this> {
    while (this.apis.length < 2) this.apis.push(await this.#start("serve"));
    while (this.workers.length < 2) this.workers.push(await this.#start("worker"));
    return this;
  }

  async stopAll(how: "SIGTERM" | "SIGKILL"): Promise<void> {
    const all = [...this.apis.splice(0), ...this.workers.splice(0)];
    await Promise.all(all.map((p) => (how === "SIGKILL" ? p.kill9() : p.stop())));
  }

  async destroy(): Promise<void> {
    await this.stopAll("SIGTERM").catch(() => this.stopAll("SIGKILL"));
    await this.#db?.drop();
  }

  async query<R extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<R[]> {
    const db = new pg.Client({ connectionString: this.uri });
    await db.connect();
    try {
      return (await db.query<R>(sql, params)).rows;
    } finally {
      await db.end();
    }
  }
}
