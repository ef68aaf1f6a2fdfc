/**
 * Debian's Chromium (scripts/install-test-deps.sh), driven with playwright-core: headless, and quiet —
 * nothing it does on its own (updates, sync, QUIC) may reach the network.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

export function launchChromium(): Promise<Browser> {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: run scripts/install-test-deps.sh`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}
