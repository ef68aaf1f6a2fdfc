/**
 * The console's sandbox pages in Debian's Chromium: a terminal into a running sandbox (xterm.js over
 * the data plane's `/execute/ws`, the API key sent as a WebSocket subprotocol) runs `echo hi`; the file
 * browser lists, uploads and downloads. On bubblewrap, the cheapest engine the sandbox tests use, with
 * the built-in `hangar/host` image; skipped, saying why, where bubblewrap or root is missing.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import type { Browser } from "playwright-core";
import { launchChromium } from "../helpers/browser.js";
import { type Hangar, http, startHangar, waitFor } from "../helpers/server.js";
import { CONSOLE_FIXTURE, openPage, signIn } from "./console-page.js";

const KEY = "console-sandbox-key";
const T = { timeout: 90_000 };

function missing(): string | false {
  if (process.getuid?.() !== 0) return "sandboxes need root";
  try {
    execFileSync("bwrap", ["--version"], { stdio: "ignore" });
  } catch {
    return "bubblewrap (bwrap) is not installed: run scripts/install-test-deps.sh";
  }
  return false;
}

describe("console: sandboxes", { skip: missing() }, () => {
  let h: Hangar;
  let browser: Browser;
  const key = { "x-api-key": KEY };

  before(async () => {
    [h, browser] = await Promise.all([
      startHangar({
        config: CONSOLE_FIXTURE,
        env: { HANGAR_API_KEYS: `${KEY}:box-org`, HANGAR_SANDBOX_ENGINE: "bwrap" },
      }),
      launchChromium(),
    ]);
    const api = (path: string, body: unknown) => http(h.url, "POST", `/v2/sandboxes${path}`, body, key);
    assert.equal(
      (
        await api("/templates", {
          name: "shell",
          image: "hangar/host",
          resources: { cpu: "1", memory: "256Mi" },
        })
      ).status,
      201,
    );
    const box = await api("/boxes", { template_name: "shell", name: "box-1", timeout: 60 });
    assert.equal(box.status, 201, box.text);
  });
  after(async () => {
    await browser?.close();
    await h?.stop();
  });

  test("the sandbox list shows it ready; its terminal runs echo hi", T, async () => {
    const cp = await openPage(browser, h.url);
    const { page } = cp;
    await signIn(page, h.url, KEY);
    await page.getByRole("link", { name: "Sandboxes" }).click();
    const row = page.getByTestId("boxes").locator("tr", { hasText: "box-1" });
    await row.getByText("ready").waitFor();
    await row.getByRole("link", { name: "box-1" }).click();

    await page.getByTestId("terminal-state").filter({ hasText: "open" }).waitFor({ timeout: 20_000 });
    const terminal = page.getByTestId("terminal");
    // biome-ignore lint/performance/useDomNodeTextContent: a locator's innerText keeps the rows' line breaks
    const screen = () => terminal.locator(".xterm-rows").innerText();
    await waitFor(async () => (await screen()).split("\n").some((line) => line.trim() === "$"), {
      timeoutMs: 10_000,
      what: "the prompt",
    });
    await terminal.click();
    await page.keyboard.type("echo hi");
    await page.keyboard.press("Enter");
    await waitFor(async () => (await screen()).split("\n").some((line) => line.trim() === "hi"), {
      timeoutMs: 10_000,
      what: "hi on its own line",
    });
    // The shell keeps its state between lines.
    await page.keyboard.type("cd /tmp && echo made > made.txt && pwd");
    await page.keyboard.press("Enter");
    await waitFor(async () => (await screen()).split("\n").some((line) => line.trim() === "/tmp"), {
      what: "pwd after cd",
    });
    assert.deepEqual(cp.foreign(), []);
    assert.deepEqual(cp.problems, []);
  });

  test("the file browser lists a directory, uploads and downloads", T, async () => {
    const { page } = await openPage(browser, h.url);
    await signIn(page, h.url, KEY);
    await page.goto(`${h.url}/console#/sandboxes/box-1`);
    const files = page.getByTestId("files");
    await page.getByLabel("Directory").fill("/tmp");
    await page.getByRole("button", { name: "Open" }).click();
    await files.getByText("made.txt").waitFor();
    // Upload: the file lands in the directory shown, and the server has it.
    await page.getByLabel("Upload").setInputFiles({
      name: "notes.txt",
      mimeType: "text/plain",
      buffer: Buffer.from("from the console\n"),
    });
    await files.getByText("notes.txt").waitFor();
    const box = (await http(h.url, "GET", "/v2/sandboxes/boxes/box-1", undefined, key)).body;
    const read = await fetch(`${box.dataplane_url}/download?path=/tmp/notes.txt`, { headers: key });
    assert.equal(await read.text(), "from the console\n");
    // Download: the browser saves the file's bytes.
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      files.locator("tr", { hasText: "made.txt" }).getByRole("button", { name: "Download" }).click(),
    ]);
    assert.equal(download.suggestedFilename(), "made.txt");
    assert.equal(await readFile((await download.path())!, "utf8"), "made\n");
  });
});
