/**
 * The long form of test/e2e/bad-input.test.ts: starts its own Hangar (embedded SQLite, or Postgres with
 * `--postgres <uri>`: a fresh database is created beside the URI's and dropped afterwards), sends
 * a sweep (every string field of every operation oversized: 1 MB in bodies, 15,000 characters in paths
 * and queries; every filter of searches and counts given values of every shape) and then 10,000+
 * malformed requests drawn at random from its /openapi.json, prints counts by status, by family and
 * by operation, lists the failures (5xx, hangs, resets) with the server's log lines, checks the server
 * still works, and exits 1 on any failure.
 *
 *   node --import tsx scripts/fuzz-api.ts [--requests 10000] [--postgres <uri>] [--seed N]
 *        [--concurrency 8] [--timeout-ms 15000] [--only "/threads"] [--replay 12,345] [--url <running server>]
 *        [--log-level debug] [--log-file server.log] [--no-sweep]
 */
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import pg from "pg";
import { checkHealthy, formatReport, runBadInputs, seedFromEnv } from "../test/helpers/bad-input.js";
import { type Hangar, startHangar } from "../test/helpers/server.js";

const { values: args } = parseArgs({
  options: {
    requests: { type: "string", default: "10000" },
    postgres: { type: "string" },
    seed: { type: "string" },
    concurrency: { type: "string", default: "8" },
    "timeout-ms": { type: "string", default: "15000" },
    only: { type: "string", multiple: true },
    replay: { type: "string" },
    url: { type: "string" },
    "log-level": { type: "string" },
    "log-file": { type: "string" },
    "no-sweep": { type: "boolean" },
    help: { type: "boolean", short: "h" },
  },
});

if (args.help) {
  console.log(
    "usage: node --import tsx scripts/fuzz-api.ts [--requests 10000] [--postgres <uri>] [--seed N] [--concurrency 8]\n" +
      "       [--timeout-ms 15000] [--only <operation substring>]... [--replay i,j,…] [--url <already running server>]\n" +
      "       [--log-level debug|info|warn|error] [--log-file <where to write the server's whole output>] [--no-sweep]",
  );
  process.exit(0);
}

const int = (name: string, text: string | undefined): number => {
  const n = Number(text);
  if (!Number.isInteger(n)) {
    console.error(`--${name} must be an integer, got ${text}`);
    process.exit(2);
  }
  return n;
};

const requests = int("requests", args.requests);
const seed = args.seed !== undefined ? int("seed", args.seed) : seedFromEnv();
const concurrency = int("concurrency", args.concurrency);
const timeoutMs = int("timeout-ms", args["timeout-ms"]);
const replay = args.replay?.split(",").map((s) => int("replay", s.trim()));

async function admin(uri: string, sql: string): Promise<void> {
  const db = new pg.Client({ connectionString: uri });
  await db.connect();
  try {
    await db.query(sql);
  } finally {
    await db.end();
  }
}

/** The fuzzed database's sessions that are not idle, with what they wait on (shown for a timeout). */
async function pgSessions(target: { admin: string; name: string }): Promise<string[]> {
  const db = new pg.Client({ connectionString: target.admin });
  await db.connect();
  try {
    const { rows } = await db.query(
      `SELECT pid, state, wait_event_type, wait_event, now() - xact_start AS xact_age,
              pg_blocking_pids(pid) AS blocked_by, left(query, 300) AS query
         FROM pg_stat_activity
        WHERE datname = $1 AND state IS DISTINCT FROM 'idle' AND pid <> pg_backend_pid()`,
      [target.name],
    );
    return rows.map(
      (r) =>
        `postgres session ${r.pid}: ${r.state}, waiting ${r.wait_event_type ?? "-"}/${r.wait_event ?? "-"}, ` +
        `transaction age ${r.xact_age ? JSON.stringify(r.xact_age) : "-"}, blocked by [${r.blocked_by}]: ${r.query}`,
    );
  } finally {
    await db.end();
  }
}

let server: Hangar | undefined;
let database: { admin: string; name: string } | undefined;

async function cleanup(): Promise<void> {
  if (server && args["log-file"]) {
    await writeFile(args["log-file"], server.logs());
    console.log(`server output written to ${args["log-file"]}`);
  }
  if (server) {
    await server.stop().catch(() => server?.kill9());
    server = undefined;
  }
  if (database) {
    await admin(database.admin, `DROP DATABASE IF EXISTS ${database.name} WITH (FORCE)`).catch((e) =>
      console.error(`could not drop ${database?.name}: ${e.message}`),
    );
    database = undefined;
  }
}

async function main(): Promise<number> {
  let baseUrl = args.url?.replace(/\/+$/, "");
  let adapter = "an already running server";
  if (!baseUrl) {
    const env: Record<string, string> = {};
    if (args["log-level"]) env.HANGAR_LOG_LEVEL = args["log-level"];
    if (args.postgres) {
      const name = `hangar_fuzz_${randomBytes(5).toString("hex")}`;
      await admin(args.postgres, `CREATE DATABASE ${name}`);
      database = { admin: args.postgres, name };
      const url = new URL(args.postgres);
      url.pathname = `/${name}`;
      env.POSTGRES_URI = url.toString();
      adapter = `Postgres (fresh database ${name})`;
    } else {
      adapter = "embedded SQLite";
    }
    server = await startHangar({ env });
    baseUrl = server.url;
  }
  console.log(
    `fuzzing ${baseUrl} (${adapter}): ${args["no-sweep"] ? "" : "the sweep, then "}${requests} requests, seed ${seed}, concurrency ${concurrency}`,
  );
  const started = Date.now();
  const report = await runBadInputs({
    baseUrl,
    requests,
    seed,
    concurrency,
    timeoutMs,
    only: args.only,
    replay,
    sweep: !args["no-sweep"],
    logs: server ? () => server!.logs() : undefined,
    alive: server
      ? () => server!.process.exitCode === null && server!.process.signalCode === null
      : undefined,
    diagnose: database ? () => pgSessions(database!) : undefined,
    onProgress: (done, total) =>
      console.log(`  … ${done}/${total} (${((Date.now() - started) / 1000).toFixed(0)} s)`),
  });
  console.log(formatReport(report, { byOperation: true }));

  let healthy = true;
  if (!report.crashed) {
    try {
      await checkHealthy(baseUrl);
      console.log("after the run: GET /ok is 200 and create thread + runs.wait(agent) works");
    } catch (error) {
      healthy = false;
      console.log(`after the run the server is NOT healthy: ${(error as Error).message}`);
    }
  }
  console.log(
    `replay one failure with: node --import tsx scripts/fuzz-api.ts --requests ${requests} --seed ${seed}${args.postgres ? " --postgres <uri>" : ""} --replay <index>`,
  );
  return report.failures.length === 0 && !report.crashed && healthy ? 0 : 1;
}

let code = 1;
try {
  code = await main();
} catch (error) {
  console.error(error);
} finally {
  await cleanup();
}
process.exit(code);
