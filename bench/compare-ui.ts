import { cpSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startHangar } from "../test/helpers/server.js";
import { startReference } from "./reference-server.js";

const BENCH = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.join(BENCH, "..");
const FIXTURE = path.join(REPO, "test", "e2e", "fixtures", "ui");
const _REFERENCE_DIR = process.env.REFERENCE_DIR ?? path.join(BENCH, "reference");

const SNIPPET_TYPE =
  "the snippet is text/html; charset=utf-8, as the Python server's text/html (the JS reference's c.text() overrides its text/html with text/plain)";
/** Where Hangar answers otherwise on purpose (README, generative UI). */
const CHOSEN: Record<string, string> = {
  "POST /ui/agent": SNIPPET_TYPE,
  "POST /ui/agent Host: localhost:3000": SNIPPET_TYPE,
  "POST /ui/agent Host: ui.example": SNIPPET_TYPE,
  "POST /ui/agent Host: 127.0.0.1.example": SNIPPET_TYPE,
  "POST /runs/stream custom events":
    "metadata.name is the node's name under Hangar's LangGraph (1.7 sets config.runName; the reference's 1.1 does not): not the server's doing",
  "POST /ui/nope": "errors are JSON {detail} (the reference answers text/plain)",
  "POST /ui/agent {}": "an invalid body is Hangar's 422 (the reference: zod's 400)",
  "POST /ui/agent {name: 3}": "an invalid body is Hangar's 422 (the reference: zod's 400)",
  "POST /ui/agent malformed JSON": "an invalid body is Hangar's 422 (the reference: 400)",
  "POST /ui/agent no body": "an invalid body is Hangar's 422 (the reference: 400)",
  'POST /ui/agent {name: "it\'s"}': "the name is escaped for its attribute (the reference's quote ends it)",
  "GET /ui/agent/nope.js": "errors are JSON {detail} (the reference answers text/plain)",
  "GET /ui/nope/entrypoint.js": "errors are JSON {detail} (the reference answers text/plain)",
};

type Row = { label: string; status: number; type: string; body: string };

/** Raw HTTP (node:http, so the Host header can be set), body as text with the port masked. */
function call(base: string, method: string, url: string, body?: string, host?: string): Promise<Row> {
  const target = new URL(base + url);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (host) headers.host = host;
    const req = request(
      { host: target.hostname, port: target.port, path: target.pathname, method, headers },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () =>
          resolve({
            label: "",
            status: res.statusCode ?? 0,
            type: String(res.headers["content-type"] ?? ""),
            body: text.replaceAll(target.port, "<port>"),
          }),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

async function requests(base: string): Promise<Row[]> {
  const rows: Row[] = [];
  const add = async (label: string, promise: Promise<Row>) => rows.push({ ...(await promise), label });
  const name = JSON.stringify({ name: "weather" });
  await add("POST /ui/agent", call(base, "POST", "/ui/agent", name));
  await add("POST /ui/agent Host: localhost:3000", call(base, "POST", "/ui/agent", name, "localhost:3000"));
  await add("POST /ui/agent Host: ui.example", call(base, "POST", "/ui/agent", name, "ui.example"));
  await add(
    "POST /ui/agent Host: 127.0.0.1.example",
    call(base, "POST", "/ui/agent", name, "127.0.0.1.example"),
  );
  await add("POST /ui/nope", call(base, "POST", "/ui/nope", name));
  await add("POST /ui/agent {}", call(base, "POST", "/ui/agent", "{}"));
  await add("POST /ui/agent {name: 3}", call(base, "POST", "/ui/agent", '{"name": 3}'));
  await add("POST /ui/agent malformed JSON", call(base, "POST", "/ui/agent", "{bad"));
  await add("POST /ui/agent no body", call(base, "POST", "/ui/agent"));
  await add(
    `POST /ui/agent {name: "it's"}`,
    call(base, "POST", "/ui/agent", JSON.stringify({ name: "it's" })),
  );
  // esbuild heads each file's CSS with a comment naming it (relative to its output folder): masked.
  const css = await call(base, "GET", "/ui/agent/entrypoint.css");
  rows.push({
    ...css,
    label: "GET /ui/agent/entrypoint.css",
    body: css.body.replace(/\/\* \S+ \*\/\n/g, ""),
  });
  const js = await call(base, "GET", "/ui/agent/entrypoint.js");
  // The scripts differ in code (each server writes its own); what matters is what they define and take.
  const summary = [
    /^var __LGUI_agent = /.test(js.body) ? "defines __LGUI_agent" : "NO __LGUI_agent",
    js.body.includes('Symbol.for("LGUI_REQUIRE")') ? "LGUI_REQUIRE" : "NO LGUI_REQUIRE",
    js.body.includes('Symbol.for("LGUI_EXT_STORE")') ? "LGUI_EXT_STORE" : "NO LGUI_EXT_STORE",
    /react\.(production|development)/.test(js.body) ? "BUNDLES REACT" : "react external",
  ].join(", ");
  rows.push({ ...js, label: "GET /ui/agent/entrypoint.js (what it does)", body: summary });
  await add("GET /ui/agent/nope.js", call(base, "GET", "/ui/agent/nope.js"));
  await add("GET /ui/nope/entrypoint.js", call(base, "GET", "/ui/nope/entrypoint.js"));
  // The UI message the graph pushes, as a custom stream event (its id and run id masked).
  const stream = await fetch(`${base}/runs/stream`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ assistant_id: "agent", input: { city: "Oslo" }, stream_mode: ["custom"] }),
  });
  // The reference writes SSE data as indented JSON over several `data:` lines: compare the values.
  const events = (await stream.text())
    .split(/\r?\n\r?\n/)
    .filter((e) => e.startsWith("event: custom"))
    .map((e) =>
      e
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).replace(/^ /, ""))
        .join("\n"),
    )
    .map((data) => JSON.stringify(JSON.parse(data)).replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, "<id>"));
  rows.push({
    label: "POST /runs/stream custom events",
    status: stream.status,
    type: "",
    body: events.join(" | "),
  });
  return rows;
}

// The fixture's copy resolves the SDK (typedUi) from this repository's node_modules.
const project = mkdtempSync(path.join(tmpdir(), "ref-ui-"));
cpSync(FIXTURE, project, { recursive: true });
symlinkSync(path.join(REPO, "node_modules"), path.join(project, "node_modules"));
const reference = await startReference({ config: path.join(project, "langgraph.json"), logs: true });
const hangar = await startHangar({ config: path.join(FIXTURE, "langgraph.json") });
try {
  const [ref, ours] = [await requests(reference.url), await requests(hangar.url)];
  let unexpected = 0;
  for (const [i, r] of ref.entries()) {
    const h = ours[i]!;
    const same = r.status === h.status && r.type === h.type && r.body === h.body;
    const why = same ? "" : CHOSEN[r.label] ? `chosen: ${CHOSEN[r.label]}` : "UNEXPECTED";
    if (why === "UNEXPECTED") unexpected++;
    console.log(`${same ? "=" : "≠"} ${r.label}${why ? `  (${why})` : ""}`);
    console.log(`    reference ${r.status} ${r.type || "-"}  ${JSON.stringify(r.body.slice(0, 300))}`);
    if (!same)
      console.log(
        `    hangar    ${h.status} ${h.type || "-"}  ${r.body === h.body ? "(same body)" : JSON.stringify(h.body.slice(0, 300))}`,
      );
  }
  console.log(unexpected ? `${unexpected} unexpected difference(s)` : "no unexpected difference");
  process.exitCode = unexpected ? 1 : 0;
} finally {
  await reference.stop();
  await hangar.stop();
  rmSync(project, { recursive: true, force: true });
}
