/**
 * The fuzz both bad-input e2e files run against a real server (test/e2e/bad-input*.test.ts): one file
 * per engine, so each has the per-file time budget to itself (a server's first schema reads compile
 * TypeScript for seconds, twice as long on a loaded machine).
 */
import assert from "node:assert/strict";
import { checkHealthy, formatReport, runBadInputs, seedFromEnv } from "./bad-input.js";
import type { Hangar } from "./server.js";

export const REQUESTS = 1_000;

/**
 * A graph's first schema read compiles its TypeScript source (seconds by design, longer on a loaded
 * machine; test/e2e/schemas*.test.ts cover it): read every graph's once before the fuzz, so the 15 s
 * hang limit measures bad input, not that.
 */
async function warmSchemas(h: Hangar): Promise<void> {
  const graphs = ["agent", "slow", "interrupt", "fail", "subgraph", "custom_state"];
  for (const graph of graphs) {
    const res = await fetch(`${h.url}/assistants/${graph}/schemas`, { signal: AbortSignal.timeout(90_000) });
    assert.equal(res.status, 200, `${graph}: ${await res.text()}`);
  }
}

/** What both runs share: the server, the seed, 8 at a time, the 15 s hang limit, its logs and liveness. */
function against(h: Hangar) {
  return {
    baseUrl: h.url,
    seed: seedFromEnv(),
    concurrency: 8,
    timeoutMs: 15_000,
    logs: () => h.logs(),
    alive: () => h.process.exitCode === null && h.process.signalCode === null,
  };
}

export async function fuzz(h: Hangar, t: { diagnostic(message: string): void }): Promise<void> {
  await warmSchemas(h);
  const report = await runBadInputs({ ...against(h), requests: REQUESTS });
  const text = formatReport(report);
  t.diagnostic(text.split("\n").slice(0, 2).join(" | "));
  assert.equal(report.crashed, undefined, text);
  assert.equal(report.sent, REQUESTS, text);
  assert.equal(report.failures.length, 0, `5xx, hangs or resets:\n${text}`);
  // Every operation was tried, and more than one status came back (the requests reached the routes).
  assert.ok(report.operations > 50, text);
  assert.ok(Object.keys(report.byOperation).length === report.operations, text);
  assert.ok((report.byStatus["422"] ?? 0) > 0 && (report.byStatus["200"] ?? 0) > 0, text);
  await checkHealthy(h.url);
}

/**
 * The sweep (`RequestArbitraries.sweep`): every string field of every operation oversized, every filter
 * of every search and count given values of every shape. Each answer a 4xx or a 2xx, never a 5xx.
 */
export async function sweep(h: Hangar, t: { diagnostic(message: string): void }): Promise<void> {
  await warmSchemas(h);
  const report = await runBadInputs({ ...against(h), requests: 0, sweep: true });
  const text = formatReport(report);
  t.diagnostic(text.split("\n").slice(0, 4).join(" | "));
  assert.equal(report.crashed, undefined, text);
  assert.equal(report.failures.length, 0, `5xx, hangs or resets:\n${text}`);
  assert.ok(report.swept > 400 && report.sent === report.swept, text);
  // The shapes reached the filters: searches answered 200 (not all refused).
  assert.ok((report.byFamily["sweep-shape"]?.["200"] ?? 0) > 100, text);
  await checkHealthy(h.url);
}
