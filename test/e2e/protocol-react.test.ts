/**
 * `@langchain/react` 1.x (`useStream`, the thread-centric protocol over SSE) in Debian's Chromium
 * against a real Hangar: fixtures/protocol-clients/react-page.tsx, bundled here with esbuild and served from
 * 127.0.0.1, chats with the `chat` graph. A submitted message streams its reply (seen growing while the
 * page says loading); a reload mid-run rejoins and shows the final reply; an interrupt is shown and
 * resumed; a second message; switching threads. On SQLite (one process), and on Postgres + Redis with
 * two API processes and two workers, where the reload goes to the other API process.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { build } from "esbuild";
import type { Browser, Page } from "playwright-core";
import { launchChromium } from "../helpers/browser.js";
import { Cluster, SKIP } from "../helpers/cluster.js";
import { type Hangar, REPO_ROOT, startHangar } from "../helpers/server.js";

const FIXTURE = join(REPO_ROOT, "test", "e2e", "fixtures", "protocol-clients");
const CONFIG = join(FIXTURE, "langgraph.json");
const T = { timeout: 120_000 };
/** Per character of a reply: long enough to see it grow and to reload in the middle. */
const REPLY_MS = "60";

let browser: Browser;
let pages: Server;
let pageOrigin: string;

before(async () => {
  const bundle = await build({
    entryPoints: [join(FIXTURE, "react-page.tsx")],
    bundle: true,
    write: false,
    format: "iife",
    platform: "browser",
    target: "es2022",
    jsx: "automatic",
    define: { "process.env.NODE_ENV": '"production"' },
    logLevel: "silent",
  });
  const script = bundle.outputFiles[0]!.contents;
  const html =
    '<!doctype html><html><head><meta charset="utf-8"><title>react protocol test</title><link rel="icon" href="data:,"></head><body><div id="root"></div><script src="/page.js"></script></body></html>';
  pages = createServer((req, res) => {
    if (req.url === "/page.js") res.writeHead(200, { "content-type": "text/javascript" }).end(script);
    else if (req.url === "/" || req.url?.startsWith("/?"))
      res.writeHead(200, { "content-type": "text/html" }).end(html);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => pages.listen(0, "127.0.0.1", resolve));
  pageOrigin = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await new Promise((resolve) => pages?.close(resolve));
});

async function openChat(api: string): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  page.on("response", (r) => {
    if (r.status() >= 400) problems.push(`${r.status()} ${r.request().method()} ${r.url()}`);
  });
  await page.goto(`${pageOrigin}/?${new URLSearchParams({ api })}`);
  return { page, problems };
}

const messages = (page: Page) =>
  page.$$eval("#messages li", (items) =>
    items.map((li) => ({
      type: li.getAttribute("data-type"),
      id: li.getAttribute("data-id"),
      text: li.textContent,
    })),
  );
const status = (page: Page) => page.textContent("#status");

async function send(page: Page, text: string): Promise<void> {
  await page.fill("#draft", text);
  await page.click("#send");
}

/** Waits until the last message is the AI's and reads `text`, and the page is idle. */
async function replied(page: Page, text: string): Promise<void> {
  await page.waitForFunction(
    (want) => {
      const items = [...document.querySelectorAll("#messages li")];
      const last = items.at(-1);
      return (
        last?.getAttribute("data-type") === "ai" &&
        last.textContent === want &&
        document.querySelector("#status")?.textContent === "idle"
      );
    },
    text,
    { timeout: 30_000 },
  );
}

/** The scenarios, on a deployment whose API processes are `apis()` (the reload goes to the last one). */
function scenarios(apis: () => string[]) {
  test(
    "a submitted message streams its reply while the page shows loading; the human message keeps its id",
    T,
    async () => {
      const [api] = apis();
      const { page, problems } = await openChat(api!);
      await send(page, "hello");
      await page.waitForFunction(() => document.querySelector("#status")?.textContent === "loading");
      // The reply is seen part-way: streamed, not delivered whole at the end.
      await page.waitForFunction(
        () => {
          const last = [...document.querySelectorAll("#messages li")].at(-1);
          const text = last?.textContent ?? "";
          return last?.getAttribute("data-type") === "ai" && text.length > 3 && text.length < 30;
        },
        undefined,
        { timeout: 20_000 },
      );
      assert.equal(await status(page), "loading");
      await replied(page, "You said: hello. That is all.");
      const shown = await messages(page);
      assert.deepEqual(
        shown.map((m) => m.type),
        ["human", "ai"],
      );
      const threadId = await page.textContent("#thread");
      const state = await (await fetch(`${api}/threads/${threadId}/state`)).json();
      assert.equal(state.values.messages[0].id, shown[0]!.id, "the client's message id is the stored one");
      assert.deepEqual(problems, []);
      await page.close();
    },
  );

  test("a reload mid-run rejoins the run and shows the final reply", T, async () => {
    const all = apis();
    const { page, problems } = await openChat(all[0]!);
    await send(page, "a message long enough to reload in the middle of its reply");
    await page.waitForFunction(() => {
      const last = [...document.querySelectorAll("#messages li")].at(-1);
      return last?.getAttribute("data-type") === "ai" && (last.textContent ?? "").length > 5;
    });
    const threadId = await page.textContent("#thread");
    assert.ok(threadId, "the page names its thread");
    // Reload on the other API process, if there is one.
    const url = new URL(page.url());
    url.searchParams.set("api", all.at(-1)!);
    url.searchParams.set("thread", threadId);
    await page.goto(url.href);
    await replied(page, "You said: a message long enough to reload in the middle of its reply. That is all.");
    assert.deepEqual(
      (await messages(page)).map((m) => m.type),
      ["human", "ai"],
    );
    assert.deepEqual(problems, []);
    await page.close();
  });

  test("an interrupt is shown, resumed, and a second message follows on the thread", T, async () => {
    const [api] = apis();
    const { page, problems } = await openChat(api!);
    await send(page, "please approve this");
    await page.waitForSelector("#interrupt", { timeout: 30_000 });
    assert.match((await page.textContent("#question")) ?? "", /Approve \\"please approve this\\"\?/);
    assert.equal(await status(page), "idle");
    await page.click("#approve");
    await replied(page, 'Approved: "yes"');
    assert.equal(await page.$("#interrupt"), null, "the interrupt is gone once answered");
    await send(page, "second");
    await replied(page, "You said: second. That is all.");
    assert.deepEqual(
      (await messages(page)).map((m) => [m.type, m.text]),
      [
        ["human", "please approve this"],
        ["ai", 'Approved: "yes"'],
        ["human", "second"],
        ["ai", "You said: second. That is all."],
      ],
    );
    assert.deepEqual(problems, []);
    await page.close();
  });

  test("switching threads shows each thread's own conversation", T, async () => {
    const [api] = apis();
    const { page, problems } = await openChat(api!);
    await send(page, "first thread");
    await replied(page, "You said: first thread. That is all.");
    const first = await page.textContent("#thread");
    await page.click("#new-thread");
    await page.waitForFunction(() => document.querySelectorAll("#messages li").length === 0);
    await send(page, "second thread");
    await replied(page, "You said: second thread. That is all.");
    const second = await page.textContent("#thread");
    assert.notEqual(first, second);
    assert.deepEqual(
      (await messages(page)).map((m) => m.text),
      ["second thread", "You said: second thread. That is all."],
    );
    await page.click(`button.switch[data-thread="${first}"]`);
    await page.waitForFunction(
      (want) => document.querySelector("#messages li")?.textContent === want,
      "first thread",
    );
    assert.deepEqual(
      (await messages(page)).map((m) => m.text),
      ["first thread", "You said: first thread. That is all."],
    );
    assert.equal(await page.textContent("#thread"), first);
    assert.deepEqual(problems, []);
    await page.close();
  });
}

describe("@langchain/react on SQLite (one process)", () => {
  let hangar: Hangar;
  before(async () => {
    hangar = await startHangar({ config: CONFIG, env: { HANGAR_TEST_REPLY_MS: REPLY_MS } });
  });
  after(async () => {
    await hangar?.stop();
  });
  scenarios(() => [hangar.url]);
});

describe("@langchain/react on Postgres + Redis, two API processes", { skip: SKIP }, () => {
  const cluster = new Cluster({ config: CONFIG, env: { HANGAR_TEST_REPLY_MS: REPLY_MS } });
  before(async () => {
    await (await cluster.create()).up();
  });
  after(() => cluster.destroy());
  scenarios(() => cluster.apis.map((a) => a.url));
});
