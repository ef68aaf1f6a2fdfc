/**
 * What the console's browser tests share (test/e2e/console-*.test.ts): a page of Debian's Chromium
 * that records every request it makes and every error it shows, and the sign-in.
 */
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { REPO_ROOT } from "../helpers/server.js";

export const CONSOLE_FIXTURE = join(REPO_ROOT, "test", "e2e", "fixtures", "console", "langgraph.json");

export interface ConsolePage {
  page: Page;
  /** `METHOD url` of every request the page made. */
  requests: string[];
  /** Console errors, page errors and failed responses (but the 401s of a sign-in probe). */
  problems: string[];
  /** Requests to anything but the server (none expected). */
  foreign(): string[];
}

export async function openPage(browser: Browser, serverUrl: string): Promise<ConsolePage> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  const requests: string[] = [];
  const problems: string[] = [];
  page.on("request", (r) => requests.push(`${r.method()} ${r.url()}`));
  page.on("console", (m) => {
    // A refused request shows as a console error too; statuses are checked by the tests themselves.
    if (m.type() === "error" && !/Failed to load resource/.test(m.text()))
      problems.push(`console: ${m.text()}`);
  });
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  const origin = new URL(serverUrl).origin;
  return {
    page,
    requests,
    problems,
    foreign: () =>
      requests.filter((r) => {
        const url = r.slice(r.indexOf(" ") + 1);
        return (
          !url.startsWith(`${origin}/`) &&
          !url.startsWith(`${origin.replace(/^http/, "ws")}/`) &&
          !url.startsWith("data:")
        );
      }),
  };
}

/** Opens /console and signs in with `key` (the server must ask for one). */
export async function signIn(page: Page, serverUrl: string, key: string): Promise<void> {
  await page.goto(`${serverUrl}/console`);
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("link", { name: "Threads" }).waitFor();
}
