/**
 * Generative UI in the console's chat, in Debian's Chromium against a real server with langgraph.json
 * `ui` (fixtures/console/ui.json): a run's UI message is rendered by the agent's component (loaded from
 * the server with the SDK's LoadExternalComponent, under the console's CSP), under the AI message it
 * belongs to, live and again when the thread is opened later.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Client } from "@langchain/langgraph-sdk";
import type { Browser, Page } from "playwright-core";
import { launchChromium } from "../helpers/browser.js";
import { type Hangar, REPO_ROOT, startHangar, waitFor } from "../helpers/server.js";
import { type ConsolePage, openPage, signIn } from "./console-page.js";

const CONFIG = join(REPO_ROOT, "test", "e2e", "fixtures", "console", "ui.json");
const KEY = "console-ui-key";
const T = { timeout: 60_000 };

describe("console: generative UI in the chat", () => {
  let h: Hangar;
  let browser: Browser;
  let cp: ConsolePage;
  let page: Page;
  let threadId: string;

  before(async () => {
    [h, browser] = await Promise.all([
      startHangar({ config: CONFIG, env: { HANGAR_API_KEYS: `${KEY}:ui-org` } }),
      launchChromium(),
    ]);
    cp = await openPage(browser, h.url);
    page = cp.page;
    await signIn(page, h.url, KEY);
  });
  after(async () => {
    await browser?.close();
    await h?.stop();
  });

  const send = async (text: string) => {
    await page.getByRole("textbox", { name: "Message", exact: true }).fill(text);
    await page.getByRole("button", { name: "Send" }).click();
  };
  const cards = () => page.getByTestId("weather");

  test("a run's UI message is rendered by the agent's component, under its message", T, async () => {
    await page.goto(`${h.url}/console#/threads/new`);
    await page.getByRole("combobox", { name: "Assistant", exact: true }).locator("option").first().waitFor({
      state: "attached",
    });
    await send("Paris");
    await cards()
      .first()
      .waitFor({ timeout: 15_000 })
      .catch((err) => {
        throw new Error(`${err.message}; problems: ${cp.problems.join(" | ")}`);
      });
    assert.match(
      (await cards().first().textContent()) ?? "",
      /^Paris: 21°C, clicked 0, thread \d+ messages$/,
    );
    // Its hook works (the page's React), and its style sheet applies (loaded under the CSP).
    await cards().first().click();
    await waitFor(async () => /clicked 1/.test((await cards().first().textContent()) ?? ""), {
      what: "the click counted",
    });
    const border = await cards()
      .first()
      .evaluate((el) => getComputedStyle(el).borderTopColor);
    assert.equal(border, "rgb(0, 128, 0)");
    // Under the AI message it belongs to.
    const turn = page
      .getByTestId("conversation")
      .locator(":scope > div", { hasText: "The weather in Paris:" });
    assert.equal(await turn.getByTestId("weather").count(), 1);
    await waitFor(() => /#\/threads\/[0-9a-f-]{36}$/.test(page.url()), { what: "the thread's id" });
    threadId = page.url().split("/").at(-1)!;
  });

  test("a second turn adds its own card; opened again, the thread shows both from its state", T, async () => {
    await send("Rome");
    await waitFor(async () => (await cards().count()) === 2, { what: "two cards" });
    const state = await new Client({ apiUrl: h.url, apiKey: KEY }).threads.getState<{ ui: unknown[] }>(
      threadId,
    );
    assert.equal(state.values.ui.length, 2);
    await page.goto(`${h.url}/console#/threads`);
    await page.goto(`${h.url}/console#/threads/${threadId}`);
    await waitFor(async () => (await cards().count()) === 2, { what: "both cards after opening the thread" });
    assert.deepEqual(
      (await cards().allTextContents()).map((t) => t.split(":")[0]),
      ["Paris", "Rome"],
    );
  });

  test("everything came from the server itself, and nothing failed (no CSP refusal)", T, async () => {
    assert.deepEqual(cp.foreign(), []);
    assert.deepEqual(cp.problems, []);
    assert.ok(cp.requests.some((r) => /^POST .*\/ui\/forecast$/.test(r)));
    assert.ok(cp.requests.some((r) => /^GET .*\/ui\/forecast\/entrypoint\.js$/.test(r)));
  });
});
