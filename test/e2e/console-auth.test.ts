/**
 * The console under API keys of two organizations: each key sees its own threads only, in the list
 * and by id, and signing out forgets the key.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Client } from "@langchain/langgraph-sdk";
import { SignJWT } from "jose";
import type { Browser } from "playwright-core";
import { launchChromium } from "../helpers/browser.js";
import { type Hangar, REPO_ROOT, startHangar } from "../helpers/server.js";
import { CONSOLE_FIXTURE, openPage, signIn } from "./console-page.js";

const T = { timeout: 60_000 };
const KEY_A = "console-key-a";
const KEY_B = "console-key-b";

describe("console: organizations", () => {
  let h: Hangar;
  let browser: Browser;
  const threads: Record<"a" | "b", string[]> = { a: [], b: [] };

  before(async () => {
    [h, browser] = await Promise.all([
      startHangar({ config: CONSOLE_FIXTURE, env: { HANGAR_API_KEYS: `${KEY_A}:org-a,${KEY_B}:org-b` } }),
      launchChromium(),
    ]);
    for (const [org, key] of [
      ["a", KEY_A],
      ["b", KEY_B],
    ] as const) {
      const c = new Client({ apiUrl: h.url, apiKey: key, callerOptions: { maxRetries: 0 } });
      for (let i = 0; i < 2; i++) {
        const t = await c.threads.create({ metadata: { owner: `org-${org}` } });
        await c.runs.wait(t.thread_id, "agent", {
          input: { messages: [{ type: "human", content: `${org}${i}` }] },
        });
        threads[org].push(t.thread_id);
      }
    }
  });
  after(async () => {
    await browser?.close();
    await h?.stop();
  });

  test("a key sees its organization's threads and never another's", T, async () => {
    const cp = await openPage(browser, h.url);
    const { page } = cp;
    for (const [org, key, other] of [
      ["a", KEY_A, "b"],
      ["b", KEY_B, "a"],
    ] as const) {
      await signIn(page, h.url, key);
      const table = page.getByTestId("threads");
      for (const id of threads[org]) await table.getByRole("link", { name: id }).waitFor();
      const listed = await table.locator("tbody tr").allInnerTexts();
      assert.equal(listed.length, 2, `only ${org}'s threads: ${listed.join(" | ")}`);
      for (const id of threads[other]) assert.ok(!listed.some((row) => row.includes(id)), `${id} not listed`);
      assert.ok(listed.every((row) => row.includes(`org-${org}`)));
      // Opened by id, the other organization's thread is not found.
      await page.goto(`${h.url}/console#/threads/${threads[other][0]}`);
      await page
        .getByRole("alert")
        .filter({ hasText: /404|not found/i })
        .first()
        .waitFor();
      assert.equal(await page.getByTestId("message").count(), 0);
      // Its own thread shows its conversation.
      await page.goto(`${h.url}/console#/threads/${threads[org][0]}`);
      await page
        .getByTestId("message")
        .filter({ hasText: `echo: ${org}0` })
        .waitFor();
      // Sign out: the key is gone, the sign-in page is back.
      await page.getByRole("button", { name: "Sign out" }).click();
      await page.getByLabel("API key").waitFor();
      assert.equal(await page.evaluate(() => sessionStorage.length), 0);
    }
    assert.deepEqual(cp.foreign(), []);
    assert.deepEqual(cp.problems, []);
  });

  test("a wrong key is refused on the sign-in page", T, async () => {
    const { page } = await openPage(browser, h.url);
    await page.goto(`${h.url}/console`);
    await page.getByLabel("API key").fill("not-a-key");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").filter({ hasText: "Invalid API key" }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
  });
});

describe("console: a custom auth handler", () => {
  let h: Hangar;
  let browser: Browser;
  const bearer = async (user: string) =>
    `Bearer ${await new SignJWT({})
      .setProtectedHeader({ alg: "HS256" })
      .setSubject(user)
      .sign(new TextEncoder().encode("test-secret-of-the-auth-suite"))}`;

  before(async () => {
    [h, browser] = await Promise.all([
      startHangar({ config: join(REPO_ROOT, "test", "e2e", "fixtures", "auth", "langgraph.json") }),
      launchChromium(),
    ]);
  });
  after(async () => {
    await browser?.close();
    await h?.stop();
  });

  test(
    "the console sends the Authorization header it was given; a user sees only their threads",
    T,
    async () => {
      const threads: Record<string, string> = {};
      for (const user of ["alice", "bob"]) {
        const c = new Client({ apiUrl: h.url, defaultHeaders: { authorization: await bearer(user) } });
        threads[user] = (await c.threads.create({ metadata: { note: `${user}'s` } })).thread_id;
      }
      const cp = await openPage(browser, h.url);
      const { page } = cp;
      await page.goto(`${h.url}/console`);
      // The handler refuses a request without a token: the console asks for one.
      await page.getByLabel("Authorization header").fill(await bearer("alice"));
      await page.getByRole("button", { name: "Sign in" }).click();
      const table = page.getByTestId("threads");
      await table.getByRole("link", { name: threads.alice! }).waitFor();
      assert.equal(await table.locator("tbody tr").count(), 1, "alice's thread only");
      assert.equal(await table.getByText(threads.bob!).count(), 0);
      // Her token carries no `delete` permission: the handler refuses, and the page says so.
      await table.getByRole("link", { name: threads.alice! }).click();
      page.once("dialog", (dialog) => void dialog.accept());
      await page.getByRole("button", { name: "Delete" }).click();
      await page.getByRole("alert").filter({ hasText: /403/ }).waitFor({ timeout: 10_000 });
      const alice = new Client({ apiUrl: h.url, defaultHeaders: { authorization: await bearer("alice") } });
      assert.equal((await alice.threads.get(threads.alice!)).thread_id, threads.alice, "still there");
      assert.deepEqual(cp.foreign(), []);
      assert.deepEqual(cp.problems, []);
    },
  );
});
