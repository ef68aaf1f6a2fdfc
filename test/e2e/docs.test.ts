/**
 * Browser test of the API reference: Debian's chromium (installed by scripts/install-test-deps.sh),
 * headless, driven by playwright-core. Opens /docs, checks that every route group is listed, runs a
 * request with try-it-out, checks that the page loaded nothing from elsewhere, and saves screenshots
 * under test-output/.
 */
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { launchChromium } from "../helpers/browser.js";
import { type Hangar, REPO_ROOT, startHangar } from "../helpers/server.js";

const OUTPUT = join(REPO_ROOT, "test-output");
const T = { timeout: 90_000 };

/** The groups the reference must show (others, such as Crons or Store, are checked via the document). */
const GROUPS = [
  "Assistants",
  "Threads",
  "Thread Runs",
  "Stateless Runs",
  "A2A",
  "MCP",
  "System",
  "Volumes",
  "Templates",
];

describe("/docs in a browser", () => {
  let h: Hangar;
  let browser: Browser;
  let page: Page;
  const requests: string[] = [];
  const problems: string[] = [];

  before(async () => {
    await mkdir(OUTPUT, { recursive: true });
    h = await startHangar();
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on("request", (r) => requests.push(r.url()));
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(`console: ${m.text()}`);
    });
    page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  });

  after(async () => {
    await browser?.close();
    await h?.stop();
  });

  test("lists every route group, titled Hangar API", T, async () => {
    const res = await page.goto(`${h.url}/docs`);
    assert.equal(res?.status(), 200);
    await page.locator(".opblock-tag").first().waitFor({ timeout: 30_000 });
    assert.equal(await page.title(), "Hangar API");
    assert.match((await page.locator(".info .title").textContent()) ?? "", /Hangar API/);

    const shown = (await page.locator(".opblock-tag").allInnerTexts()).map((t) => t.split("\n")[0]!.trim());
    for (const group of GROUPS)
      assert.ok(shown.includes(group), `group ${group} listed in ${JSON.stringify(shown)}`);
    // Every tag of the document (Crons, Store, … once they are served) is on the page.
    const doc = await (await fetch(`${h.url}/openapi.json`)).json();
    for (const tag of doc.tags) assert.ok(shown.includes(tag.name), `group ${tag.name} listed`);
    // The security scheme is offered.
    assert.ok(await page.locator("button.authorize").isVisible(), "an Authorize button");

    await page.screenshot({ path: join(OUTPUT, "docs.png") });
    await page.screenshot({ path: join(OUTPUT, "docs-full.png"), fullPage: true });
  });

  test("try-it-out sends a request to this server and shows the answer", T, async () => {
    const op = page.locator('[id="operations-System-get_ok"]');
    await op.locator(".opblock-summary").click();
    await op.locator("button.try-out__btn").click();
    await op.locator("button.execute").click();
    const status = op.locator(".live-responses-table .response .response-col_status").first();
    await status.waitFor({ timeout: 20_000 });
    assert.equal((await status.textContent())?.trim(), "200");
    assert.match(
      (await op.locator(".live-responses-table .response-col_description pre").first().textContent()) ?? "",
      /"ok": true/,
    );
    await op.scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(OUTPUT, "docs-try-it-out.png") });
  });

  test("loaded nothing from elsewhere, and nothing failed", T, async () => {
    const origin = new URL(h.url).origin;
    const foreign = requests.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith("data:"));
    assert.deepEqual(foreign, [], "every request goes to the server itself");
    assert.ok(requests.includes(`${origin}/openapi.json`), "the page read /openapi.json");
    assert.deepEqual(problems, []);
  });
});
