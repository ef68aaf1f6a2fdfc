import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isTimeZone, nextRunAt, scheduleError } from "../../src/runtime/crons/expression.js";

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

describe("cron schedules", () => {
  test("valid: five fields, six with leading seconds, macros", () => {
    for (const s of [
      "* * * * *",
      "*/5 * * * *",
      "0 9 * * 1-5",
      "30 2 1 1,7 *",
      "* * * * * *",
      "@daily",
      " 0 0 * * 0 ",
    ]) {
      assert.equal(scheduleError(s), null, s);
    }
  });

  test("invalid: the reason is named", () => {
    const cases: [string, RegExp][] = [
      ["", /empty/],
      ["   ", /empty/],
      ["* * *", /5 fields.*got 3/],
      ["* * * * * * *", /got 7/],
      ["61 * * * *", /61/],
      ["* * * * 8", /8/],
      ["a b c d e", /Invalid/i],
      ["0 0 31 2 *", /day of month/i],
      ["@sometimes", /unknown macro/],
    ];
    for (const [s, reason] of cases) {
      const problem = scheduleError(s);
      assert.ok(problem, `"${s}" should be refused`);
      assert.match(problem, reason, s);
    }
  });

  test("time zones: IANA names only", () => {
    assert.ok(isTimeZone("UTC"));
    assert.ok(isTimeZone("Europe/Paris"));
    assert.ok(isTimeZone("America/New_York"));
    assert.ok(!isTimeZone("Mars/Olympus_Mons"));
    assert.ok(!isTimeZone(""));
  });

  test("next firing is strictly after the given time", () => {
    assert.equal(iso(nextRunAt("* * * * *", null, at("2026-01-01T00:00:00Z"))), "2026-01-01T00:01:00.000Z");
    assert.equal(iso(nextRunAt("* * * * *", null, at("2026-01-01T00:00:30Z"))), "2026-01-01T00:01:00.000Z");
    assert.equal(
      iso(nextRunAt("* * * * * *", null, at("2026-01-01T00:00:00.500Z"))),
      "2026-01-01T00:00:01.000Z",
    );
    assert.equal(iso(nextRunAt("0 9 * * 1-5", null, at("2026-01-02T10:00:00Z"))), "2026-01-05T09:00:00.000Z");
  });

  test("read in the cron's time zone, across a daylight-saving change", () => {
    // 9:00 in New York is 14:00 UTC in winter and 13:00 UTC in summer (DST began 2026-03-08).
    assert.equal(
      iso(nextRunAt("0 9 * * *", "America/New_York", at("2026-03-07T15:00:00Z"))),
      "2026-03-08T13:00:00.000Z",
    );
    assert.equal(
      iso(nextRunAt("0 9 * * *", "America/New_York", at("2026-01-10T00:00:00Z"))),
      "2026-01-10T14:00:00.000Z",
    );
  });

  test("none past the end time (inclusive)", () => {
    const from = at("2026-01-01T00:00:00Z");
    assert.equal(nextRunAt("* * * * *", null, from, at("2026-01-01T00:00:59Z")), null);
    assert.equal(
      iso(nextRunAt("* * * * *", null, from, at("2026-01-01T00:01:00Z"))),
      "2026-01-01T00:01:00.000Z",
    );
  });
});
