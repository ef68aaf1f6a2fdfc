/**
 * Screenshots of every console page for docs/console.md (`npm run console:screenshots`), taken in
 * Debian's Chromium against a real server holding a little of everything: threads of the console
 * fixture's graphs (a streamed reply with a tool call, an interrupt waiting, a failed run), an
 * assistant, a cron, store items and, where bubblewrap runs, a sandbox; then, on a server with
 * langgraph.json `ui`, a generative UI message in the chat. Also prints the figures
 * docs/console.md quotes: the bundle's size and the first paint from a cold server.
 *
 * Writes docs/console/*.png.
 */
import { execFileSync } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { Client } from "@langchain/langgraph-sdk";
import { CONSOLE_FIXTURE, signIn } from "../test/e2e/console-page.js";
import { launchChromium } from "../test/helpers/browser.js";
import { http, REPO_ROOT, startHangar, waitFor } from "../test/helpers/server.js";

const KEY = "screenshots-key";
const OUT = join(REPO_ROOT, "docs", "console");

function canRunSandboxes(): boolean {
  if (process.getuid?.() !== 0) return false;
  try {
    execFileSync("bwrap", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

const human = (content: string) => ({ messages: [{ type: "human", content }] });

async function main() {
  await mkdir(OUT, { recursive: true });
  const sandboxes = canRunSandboxes();
  const h = await startHangar({
    config: CONSOLE_FIXTURE,
    env: { HANGAR_API_KEYS: `${KEY}:docs`, ...(sandboxes ? { HANGAR_SANDBOX_ENGINE: "bwrap" } : {}) },
  });
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const shot = async (name: string) => {
      await page.waitForTimeout(300); // let the last fetches render
      await page.screenshot({ path: join(OUT, `${name}.png`) });
      console.log(`docs/console/${name}.png`);
    };

    // Cold server: the first page, timed.
    const started = Date.now();
    await page.goto(`${h.url}/console`);
    await page.getByLabel("API key").waitFor();
    const shownMs = Date.now() - started;
    const fcp = await page.evaluate(
      () => performance.getEntriesByName("first-contentful-paint")[0]?.startTime,
    );
    await shot("sign-in");

    const html = (await http(h.url, "GET", "/console")).text;
    const entry = /src="(console\/assets\/[^"]+)"/.exec(html)![1]!;
    const css = /href="(console\/assets\/[^"]+\.css)"/.exec(html)![1]!;
    const script = (await http(h.url, "GET", `/${entry}`)).text;
    const chunks = [...new Set([...script.matchAll(/"\.\/(chunk-[A-Z0-9]+\.js)"/g)].map((m) => m[1]!))];
    const size = async (path: string) => {
      const res = await fetch(`${h.url}/${path}`, { headers: { "accept-encoding": "identity" } });
      const bytes = (await res.arrayBuffer()).byteLength;
      return bytes;
    };
    const figures = {
      first_contentful_paint_ms: Math.round(fcp ?? -1),
      sign_in_shown_ms: shownMs,
      entry_js_bytes: await size(entry),
      css_bytes: await size(css),
      chunks: Object.fromEntries(
        await Promise.all(chunks.map(async (c) => [c, await size(`console/assets/${c}`)])),
      ),
    };

    // Data to show.
    const c = new Client({ apiUrl: h.url, apiKey: KEY, callerOptions: { maxRetries: 0 } });
    const weather = await c.threads.create({ metadata: { user: "ada" } });
    await c.runs.wait(weather.thread_id, "typist", {
      input: human("What is the weather in Paris?"),
      config: { configurable: { char_ms: 1 } },
    });
    const waiting = await c.threads.create({ metadata: { user: "grace" } });
    await c.runs.wait(waiting.thread_id, "interrupt", { input: human("Deploy to production?") });
    const chat = await c.threads.create({ metadata: { user: "ada" } });
    await c.runs.wait(chat.thread_id, "agent", { input: human("first") });
    await c.runs.wait(chat.thread_id, "agent", { input: human("second") });
    const failed = await c.threads.create();
    await c.runs.wait(failed.thread_id, "fail", { input: human("boom") }).catch(() => {});
    await c.assistants.create({
      graphId: "typist",
      name: "slow typist",
      config: { configurable: { char_ms: 120 } },
    });
    await c.crons.create("agent", { schedule: "*/15 * * * *", input: human("scheduled hello") });
    await c.store.putItem(["users", "ada", "memories"], "favourite-city", { city: "Paris" });
    await c.store.putItem(["users", "ada", "memories"], "tone", { prefers: "short answers" });
    await c.store.putItem(["users", "grace", "memories"], "role", { title: "admiral" });

    await signIn(page, h.url, KEY);
    await page.getByTestId("threads").locator("tbody tr").nth(3).waitFor();
    await shot("threads");

    await page.goto(`${h.url}/console#/threads/${weather.thread_id}`);
    await page.getByTestId("message").filter({ hasText: "It is sunny in Paris." }).waitFor();
    await shot("thread-chat");

    await page.goto(`${h.url}/console#/threads/${waiting.thread_id}`);
    await page.getByTestId("interrupt").waitFor();
    await page.getByLabel("Resume value").fill("yes");
    await shot("thread-interrupt");

    await page.goto(`${h.url}/console#/threads/${chat.thread_id}`);
    await page.getByRole("tab", { name: "History" }).click();
    await page
      .getByTestId("checkpoint")
      .filter({ hasText: /step 1 .*ai: echo: first/ })
      .click();
    await page.getByLabel("Fork input").fill("third");
    await shot("thread-history");

    await page.getByRole("tab", { name: "Runs" }).click();
    await page.getByTestId("runs").waitFor();
    await shot("thread-runs");

    // A slow run in flight and one waiting behind it, for the queue page.
    const busy = await c.threads.create();
    await c.runs.create(busy.thread_id, "slow", {
      input: human("a long one"),
      config: { configurable: { sleep_ms: 30_000 } },
    });
    await c.runs.create(busy.thread_id, "agent", {
      input: human("queued behind it"),
      multitaskStrategy: "enqueue",
    });
    await page.goto(`${h.url}/console#/runs`);
    await page.getByText("Running (1)").waitFor({ timeout: 15_000 });
    const failedRow = page.locator("tr", { has: page.getByText("error", { exact: true }) }).first();
    await failedRow.getByRole("button", { name: "Error" }).click();
    await page.getByTestId("trace").first().waitFor();
    await shot("runs-queue");

    await page.goto(`${h.url}/console#/assistants`);
    await page.getByTestId("assistants").getByText("slow typist").waitFor();
    await shot("assistants");

    const nested = (await c.assistants.search({ graphId: "nested" }))[0]!;
    await page.goto(`${h.url}/console#/assistants/${nested.assistant_id}`);
    await page.getByLabel("xray (subgraphs)").check();
    await page.getByTestId("graph").locator(".react-flow__node").nth(5).waitFor();
    await shot("assistant-graph");

    const deep = (await c.assistants.search({ graphId: "deep" }))[0]!;
    await page.goto(`${h.url}/console#/assistants/${deep.assistant_id}`);
    await page.getByLabel("nested (recurse)").check();
    await page.getByTestId("subgraph").nth(1).waitFor({ timeout: 60_000 });
    await page.locator('[data-namespace="middle|leaf"]').getByText("state schema", { exact: true }).click();
    await page.getByTestId("subgraph").first().scrollIntoViewIfNeeded();
    await shot("assistant-subgraphs");

    await page.goto(`${h.url}/console#/crons`);
    await page.getByTestId("crons").waitFor();
    await shot("crons");

    await page.goto(`${h.url}/console#/store`);
    await page.getByRole("button", { name: "users / ada / memories" }).click();
    await page.getByTestId("items").getByText("favourite-city").waitFor();
    await shot("store");

    if (sandboxes) {
      const key = { "x-api-key": KEY };
      const create = async (path: string, body: unknown) => {
        const res = await http(h.url, "POST", `/v2/sandboxes${path}`, body, key);
        if (res.status >= 300) throw new Error(`POST ${path}: ${res.status} ${res.text}`);
      };
      const resources = { cpu: "500m", memory: "256Mi" };
      await create("/volumes", { name: "data", size: "1Gi" });
      await create("/templates", {
        name: "shell",
        image: "hangar/host",
        resources,
        volume_mounts: [{ volume_name: "data", mount_path: "/data" }],
      });
      await create("/templates", { name: "pooled", image: "hangar/host", resources });
      await create("/pools", { name: "warm", template_name: "pooled", replicas: 1, timeout: 60 });
      await create("/boxes", { template_name: "shell", name: "box-1", timeout: 60 });
      await page.goto(`${h.url}/console#/sandboxes`);
      await page.getByTestId("boxes").getByText("ready").waitFor();
      await shot("sandboxes");
      await page.goto(`${h.url}/console#/sandboxes/box-1`);
      await page.getByTestId("terminal-state").filter({ hasText: "open" }).waitFor();
      const terminal = page.getByTestId("terminal");
      await waitFor(async () =>
        // biome-ignore lint/performance/useDomNodeTextContent: a locator's innerText keeps the rows' line breaks
        (await terminal.locator(".xterm-rows").innerText()).split("\n").some((l) => l.trim() === "$"),
      );
      await terminal.click();
      for (const line of [
        "echo hi",
        "echo 'kept in the volume' > /data/notes.txt",
        "ls -l /data",
        "uname -sm",
      ]) {
        await page.keyboard.type(line);
        await page.keyboard.press("Enter");
        await page.waitForTimeout(300); // the output before the next line, as a person types
      }
      await page.getByLabel("Directory").fill("/data");
      await page.getByRole("button", { name: "Open" }).click();
      await page.getByTestId("files").getByText("notes.txt").waitFor();
      await shot("sandbox-terminal");
    } else {
      console.log("sandboxes: skipped (needs root and bubblewrap)");
    }
    console.log(JSON.stringify(figures, null, 2));
  } finally {
    await browser.close();
    await h.stop();
  }
  await generativeUi();
}

/** A generative UI message in the chat: a server of its own, with langgraph.json `ui` (fixtures/console/ui.json). */
async function generativeUi() {
  const h = await startHangar({
    config: join(REPO_ROOT, "test", "e2e", "fixtures", "console", "ui.json"),
    env: { HANGAR_API_KEYS: `${KEY}:docs` },
  });
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await signIn(page, h.url, KEY);
    await page.goto(`${h.url}/console#/threads/new`);
    await page.getByRole("combobox", { name: "Assistant", exact: true }).locator("option").first().waitFor({
      state: "attached",
    });
    for (const city of ["Paris", "Rome"]) {
      await page.getByRole("textbox", { name: "Message", exact: true }).fill(city);
      await page.getByRole("button", { name: "Send" }).click();
      await page.getByTestId("weather").filter({ hasText: city }).waitFor();
    }
    await page.getByTestId("weather").first().click();
    await page.waitForTimeout(300);
    await page.screenshot({ path: join(OUT, "thread-ui.png") });
    console.log("docs/console/thread-ui.png");
  } finally {
    await browser.close();
    await h.stop();
  }
}

await main();
