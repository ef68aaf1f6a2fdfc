/**
 * The console's bundle stays small: what the first page loads, and the whole, gzipped as the server
 * sends them, within budgets a little above today's figures (docs/console.md, "Size and speed"). A
 * dependency that drags a large library into the first page, or a lazy chunk made eager, fails here.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { gzipSync } from "node:zlib";
import { buildConsole } from "../../src/console/bundle.js";

const KB = 1024;
/** Gzipped. Today: about 205 KB for the first page, 396 KB for the whole. */
const FIRST_PAGE_BUDGET = 240 * KB;
const WHOLE_BUDGET = 460 * KB;

test("the console's first page and whole bundle stay within their gzipped budgets", async () => {
  const bundle = await buildConsole();
  const gzipped = (name: string) => {
    const asset = bundle.assets.get(name);
    assert.ok(asset, `${name} is in the bundle`);
    return gzipSync(asset.contents).byteLength;
  };
  const firstPage = bundle.firstPage.reduce((sum, name) => sum + gzipped(name), 0);
  const whole = [...bundle.assets.keys()].reduce((sum, name) => sum + gzipped(name), 0);
  console.log(
    `console bundle, gzipped: first page ${(firstPage / KB).toFixed(0)} KB (${bundle.firstPage.length} files),` +
      ` whole ${(whole / KB).toFixed(0)} KB (${bundle.assets.size} files)`,
  );

  assert.ok(bundle.firstPage.includes(bundle.script), "the entry script is on the first page");
  for (const sheet of bundle.styles)
    assert.ok(bundle.firstPage.includes(sheet), `${sheet} is on the first page`);
  assert.ok(bundle.firstPage.length < bundle.assets.size, "the terminal and the graph view stay lazy chunks");
  assert.ok(
    firstPage <= FIRST_PAGE_BUDGET,
    `first page ${firstPage} bytes gzipped > budget ${FIRST_PAGE_BUDGET}`,
  );
  assert.ok(whole <= WHOLE_BUDGET, `whole bundle ${whole} bytes gzipped > budget ${WHOLE_BUDGET}`);
});
