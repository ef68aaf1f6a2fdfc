import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startReference } from "./reference-server.js";

const BENCH = path.dirname(fileURLToPath(import.meta.url));
const FIXTURE = path.join(BENCH, "..", "test", "e2e", "fixtures", "schemas");
const CONFIG = path.join(FIXTURE, "langgraph.json");
const GRAPHS = Object.keys(JSON.parse(readFileSync(CONFIG, "utf8")).graphs);

const reference = await startReference({ config: CONFIG, logs: true });
const base = reference.url;
const get = async (url: string) => {
  const res = await fetch(base + url);
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  return res.json();
};
try {
  const recorded: Record<string, unknown> = {};
  for (const graph of GRAPHS) {
    const started = Date.now();
    const schemas = await get(`/assistants/${graph}/schemas`);
    console.log(`${graph}: schemas in ${Date.now() - started} ms`);
    recorded[graph] = {
      schemas,
      subgraphs: await get(`/assistants/${graph}/subgraphs?recurse=true`),
      graph: await get(`/assistants/${graph}/graph?xray=true`),
    };
  }
  const out = path.join(FIXTURE, "reference.json");
  writeFileSync(out, `${JSON.stringify(recorded, null, 2)}\n`);
  console.log(`wrote ${out}`);
} finally {
  await reference.stop();
}
