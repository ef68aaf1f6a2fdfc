/**
 * Records what the reference JS Agent Server (@langchain/langgraph-api 2.0.0, bench/reference) answers
 * for the scenario of every graph of the release fixtures (test/e2e/fixtures/releases/scenarios.ts),
 * each project run on its OWN LangGraph release (PROJECT_PACKAGES=1), into
 * test/e2e/fixtures/releases/reference-releases.json, which test/e2e/releases.test.ts compares Hangar's
 * answers with. Run it again only when the scenarios or the fixtures change:
 *
 *   (cd bench/reference && npm ci) && node --import tsx scripts/record-reference-releases.ts [fixture…]
 *
 * Naming fixtures records only those (the others keep their recording).
 * Each fixture's node_modules must be installed (scripts/install-test-deps.sh does it). The reference's
 * schema extraction is given 180 s (LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS) instead of 30: reading a project's
 * TypeScript types takes longer than 30 s on a loaded machine, and a timed-out read records a 500.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@langchain/langgraph-sdk";
import { REFERENCE_DIR, startReference } from "../bench/reference-server.js";
import { FIXTURES, type FixtureName, runScenario } from "../test/e2e/fixtures/releases/scenarios.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const RELEASES = path.join(ROOT, "test", "e2e", "fixtures", "releases");
const OUT = path.join(RELEASES, "reference-releases.json");
const version = (dir: string, pkg: string) =>
  JSON.parse(readFileSync(path.join(dir, "node_modules", pkg, "package.json"), "utf8")).version;

process.env.PROJECT_PACKAGES = "1";
process.env.LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS = "180000";
const only = process.argv.slice(2);
const recording: Record<string, unknown> = {
  ...(only.length > 0 && existsSync(OUT) ? JSON.parse(readFileSync(OUT, "utf8")) : {}),
  recorded_with: { "@langchain/langgraph-api": version(REFERENCE_DIR, "@langchain/langgraph-api") },
};
for (const [fixture, graphs] of Object.entries(FIXTURES) as [FixtureName, readonly string[]][]) {
  if (only.length > 0 && !only.includes(fixture)) continue;
  const dir = path.join(RELEASES, fixture);
  const reference = await startReference({ config: path.join(dir, "langgraph.json") });
  try {
    const client = new Client({ apiUrl: reference.url });
    const facts: Record<string, unknown> = { "@langchain/langgraph": version(dir, "@langchain/langgraph") };
    for (const graph of graphs) {
      facts[graph] = await runScenario(client, graph);
      console.log(`${fixture} ${graph}: recorded`);
    }
    recording[fixture] = facts;
  } finally {
    await reference.stop();
  }
}
writeFileSync(OUT, `${JSON.stringify(recording, null, 2)}\n`);
// As the repository keeps it (`npm run check` formats JSON too): a new recording shows only what changed.
execFileSync(path.join(ROOT, "node_modules", ".bin", "biome"), ["format", "--write", OUT], {
  cwd: ROOT,
  stdio: "ignore",
});
console.log(`wrote ${path.relative(ROOT, OUT)}`);
