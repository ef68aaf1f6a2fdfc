/**
 * The console's other pages in Debian's Chromium, on a server without API keys (the console opens
 * without asking): the queue with a pending and a running run cancelled from the page, a failed run's
 * trace, an assistant's subgraphs' schemas (recurse), an assistant's graph drawn with its subgraph
 * (xray) and its config edited into a new version, a cron disabled and
 * enabled, the store browsed by namespace and searched.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client } from "@langchain/langgraph-sdk";
import type { Browser, Page } from "playwright-core";
import { launchChromium } from "../helpers/browser.js";
import { type Hangar, human, startHangar, waitFor } from "../helpers/server.js";
import { CONSOLE_FIXTURE, type ConsolePage, openPage } from "./console-page.js";

const T = { timeout: 60_000 };

describe("console: queue, assistants, crons, store", () => {
  let h: Hangar;
  let browser: Browser;
  let cp: ConsolePage;
  let page: Page;
  let c: Client;

  before(async () => {
    [h, browser] = await Promise.all([startHangar({ config: CONSOLE_FIXTURE }), launchChromium()]);
    c = new Client({ apiUrl: h.url, callerOptions: { maxRetries: 0 } });
    cp = await openPage(browser, h.url);
    page = cp.page;
  });
  after(async () => {
    await browser?.close();
    await h?.stop();
  });

  test("a server without keys opens the console without asking for one", T, async () => {
    await page.goto(`${h.url}/console`);
    await page.locator("h1", { hasText: "Threads" }).waitFor();
    assert.equal(await page.getByLabel("API key").count(), 0);
  });

  test("a thread whose run was started elsewhere shows it live, joined", T, async () => {
    const thread = await c.threads.create();
    await c.runs.create(thread.thread_id, "slow", {
      input: human("watch me"),
      config: { configurable: { sleep_ms: 3000 } },
    });
    await page.goto(`${h.url}/console#/threads/${thread.thread_id}`);
    await page.getByTestId("streaming").waitFor({ timeout: 10_000 });
    // Its reply arrives through the joined stream: the page is not reloaded.
    await page.getByTestId("message").filter({ hasText: "slow echo: watch me" }).waitFor({ timeout: 15_000 });
    await page.getByTestId("streaming").waitFor({ state: "detached" });
  });

  test("the queue shows a running and a pending run; both are cancelled from the page", T, async () => {
    const thread = await c.threads.create();
    const slow = { configurable: { sleep_ms: 30_000 } };
    const running = await c.runs.create(thread.thread_id, "slow", {
      input: human("a long one"),
      config: slow,
    });
    const pending = await c.runs.create(thread.thread_id, "agent", { input: human("after it") });
    await page.goto(`${h.url}/console#/runs`);
    const section = (title: string) =>
      page.locator("section", { has: page.getByRole("heading", { name: title }) });
    await section("Running (1)")
      .getByTitle(running.run_id)
      .waitFor({ timeout: 15_000 })
      .catch(async (err) => {
        await page.screenshot({ path: "test-output/console-queue.png" });
        const runs = await c.runs.list(thread.thread_id);
        throw new Error(`${err.message}; runs: ${JSON.stringify(runs.map((r) => [r.run_id, r.status]))}`);
      });
    await section("Pending (1)").getByTitle(pending.run_id).waitFor();
    assert.match(
      (await page.getByTestId("figures").textContent()) ?? "",
      /1pending \(server\)1running \(server\)/,
    );

    await section("Pending (1)").getByRole("button", { name: "Cancel" }).click();
    await section("Running (1)").getByRole("button", { name: "Cancel" }).click();
    await waitFor(
      async () => {
        const runs = await c.runs.list(thread.thread_id);
        return runs.every((r) => r.status === "interrupted");
      },
      { timeoutMs: 15_000, what: "both runs interrupted" },
    );
    // They move to the recent outcomes, where a finished run shows its outcome.
    await section("Pending (0)").waitFor();
    await section("Running (0)").waitFor();
    await section("Recent outcomes").getByTitle(running.run_id).waitFor();
  });

  test("a failed run is listed with the recent errors, its stack trace shown", T, async () => {
    const thread = await c.threads.create();
    // The SDK raises the run's error (its type and message, as the official servers send them).
    await assert.rejects(c.runs.wait(thread.thread_id, "fail", { input: human("boom") }), /Boo!/);
    const [failed] = await c.runs.list(thread.thread_id);
    await page.goto(`${h.url}/console#/runs`);
    const errors = page.locator("section", { has: page.getByRole("heading", { name: "Recent errors" }) });
    const row = errors.locator("tr", { has: page.getByTitle(failed!.run_id) });
    await row.getByRole("button", { name: "Error" }).click();
    const shown = errors.getByTestId("run-error");
    await shown.getByText("CustomError: Boo!", { exact: false }).first().waitFor();
    const trace = (await shown.getByTestId("trace").textContent()) ?? "";
    assert.match(trace, /^CustomError: Boo!\n\s+at /);
    assert.match(trace, /examples\/src\/fail\.ts:\d+/);
    // The thread's runs tab shows the same error and trace.
    await page.goto(`${h.url}/console#/threads/${thread.thread_id}`);
    await page.getByRole("tab", { name: "Runs" }).click();
    await page.getByTestId("runs").getByRole("button", { name: "Error" }).click();
    await page
      .getByTestId("trace")
      .getByText(/examples\/src\/fail\.ts/)
      .waitFor();
  });

  test("an assistant's subgraphs' schemas beside its own, one level and nested (recurse)", T, async () => {
    const deep = (await c.assistants.search({ graphId: "deep" }))[0]!;
    await page.goto(`${h.url}/console#/assistants/${deep.assistant_id}`);
    const subgraphs = page.getByTestId("subgraph");
    // The first schemas of a graph without run-time ones are read from its TypeScript source: seconds.
    await subgraphs.first().waitFor({ timeout: 45_000 });
    const namespaces = () => subgraphs.evaluateAll((els) => els.map((e) => e.getAttribute("data-namespace")));
    assert.deepEqual(await namespaces(), ["middle"]);
    const stateOf = async (scope: ReturnType<Page["locator"]>) => {
      await scope.getByText("state schema", { exact: true }).click();
      return (await scope.locator("details[open] .json").textContent()) ?? "";
    };
    const own = page.locator("section", { has: page.getByRole("heading", { name: "Schemas", exact: true }) });
    const ownState = await stateOf(own);
    assert.match(ownState, /"depth"/);
    assert.doesNotMatch(ownState, /middle_note/);
    assert.match(await stateOf(page.locator('[data-namespace="middle"]')), /"middle_note"/);
    await page.getByLabel("nested (recurse)").check();
    await waitFor(async () => (await subgraphs.count()) === 2, { what: "the nested subgraph listed" });
    assert.deepEqual(await namespaces(), ["middle", "middle|leaf"]);
    assert.match(await stateOf(page.locator('[data-namespace="middle|leaf"]')), /"leaf_note"/);
    // A graph without subgraphs says so.
    const agent = (await c.assistants.search({ graphId: "agent" }))[0]!;
    await page.goto(`${h.url}/console#/assistants/${agent.assistant_id}`);
    await page.getByText("No subgraphs.").waitFor({ timeout: 45_000 });
  });

  test(
    "an assistant: its graph with the subgraph's nodes (xray), its config edited as a new version",
    T,
    async () => {
      await page.goto(`${h.url}/console#/assistants`);
      await page.getByLabel("Graph", { exact: true }).fill("nested");
      await page.getByRole("button", { name: "Search" }).click();
      const table = page.getByTestId("assistants");
      await waitFor(async () => (await table.locator("tbody tr").count()) === 1, {
        what: "only nested listed",
      });
      await table.getByRole("link", { name: "nested" }).click();
      const nodes = page.getByTestId("graph").locator(".react-flow__node");
      await nodes.first().waitFor({ timeout: 15_000 });
      assert.deepEqual((await nodes.allTextContents()).sort(), ["__end__", "__start__", "greet", "inner"]);
      await page.getByLabel("xray (subgraphs)").check();
      await waitFor(async () => (await nodes.count()) > 4, { what: "the subgraph's nodes" });
      const labels = await nodes.allTextContents();
      for (const node of ["inner › model", "inner › tools", "inner › summary"])
        assert.ok(labels.includes(node), `${node} in ${labels}`);

      await page.getByLabel("Assistant config").fill('{"configurable": {"tone": "dry"}}');
      await page.getByRole("button", { name: "Save" }).click();
      const id = page.url().split("/").at(-1)!;
      await waitFor(async () => (await c.assistants.get(id)).version === 2, { what: "a new version" });
      assert.deepEqual((await c.assistants.get(id)).config.configurable, { tone: "dry" });
      await page
        .locator("section", { hasText: "Versions" })
        .getByRole("cell", { name: "2", exact: true })
        .waitFor();
    },
  );

  test("a cron is disabled and enabled with its checkbox; its next run shows while enabled", T, async () => {
    const cron = await c.crons.create("agent", { schedule: "0 3 * * *", input: human("nightly") });
    await page.goto(`${h.url}/console#/crons`);
    const row = page.getByTestId("crons").locator("tr", { hasText: "0 3 * * *" });
    const enabled = row.getByRole("checkbox", { name: "Enabled" });
    await enabled.waitFor();
    assert.equal(await enabled.isChecked(), true);
    assert.doesNotMatch((await row.textContent()) ?? "", /disabled/);
    await enabled.uncheck();
    await row.getByText("— (disabled)").waitFor();
    const read = async () =>
      (await c.crons.search({})).find((x) => x.cron_id === cron.cron_id) as { enabled?: boolean };
    assert.equal((await read()).enabled, false);
    await enabled.check();
    await waitFor(async () => (await read()).enabled === true, { what: "enabled again" });
  });

  test("the store: namespaces, a namespace's items, a search with a filter", T, async () => {
    await c.store.putItem(["users", "ada", "memories"], "city", { city: "Paris" });
    await c.store.putItem(["users", "ada", "memories"], "tone", { prefers: "short answers" });
    await c.store.putItem(["users", "grace", "memories"], "role", { title: "admiral" });
    await page.goto(`${h.url}/console#/store`);
    await page.getByRole("button", { name: "users / ada / memories" }).click();
    const items = page.getByTestId("items");
    await page.getByRole("heading", { name: "Items in users / ada / memories" }).waitFor();
    await waitFor(async () => (await items.locator("tr").count()) === 2, { what: "ada's items only" });
    await items.getByText("tone").waitFor();
    await page.getByLabel("Filter").fill('{"city": "Paris"}');
    await page.getByRole("button", { name: "Search" }).click();
    await waitFor(async () => (await items.locator("tr").count()) === 1, { what: "the filtered items" });
    await items.getByText("city", { exact: true }).waitFor();
  });

  test("everything came from the server itself, and nothing failed", T, async () => {
    assert.deepEqual(cp.foreign(), []);
    assert.deepEqual(cp.problems, []);
  });
});
