import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DEFAULT_SANDBOX_STORAGE_QUOTA, sandboxStorageQuotaFromEnv } from "../../src/config/settings.js";
import { isValidName, nameProblem } from "../../src/sandboxes/names.js";
import {
  ceilScaled,
  formatGi,
  parseQuantity,
  QuantityError,
  toBytes,
  toBytesOrZero,
  toMillicores,
} from "../../src/sandboxes/quantity.js";

const Ki = 1024;
const Mi = Ki * 1024;
const Gi = Mi * 1024;
const Ti = Gi * 1024;
const Pi = Ti * 1024;

/** Exact value in bytes (rounded up), as a BigInt, whatever its size. */
const bytesOf = (text: string) => ceilScaled(parseQuantity(text), 1n);

describe("quantity grammar", () => {
  test("binary SI suffixes", () => {
    assert.equal(toBytes("1Ki"), Ki);
    assert.equal(toBytes("1Mi"), Mi);
    assert.equal(toBytes("10Gi"), 10 * Gi);
    assert.equal(toBytes("2Ti"), 2 * Ti);
    assert.equal(toBytes("3Pi"), 3 * Pi);
    assert.equal(bytesOf("1Ei"), 1n << 60n);
    assert.equal(toBytes("512Mi"), 512 * Mi);
  });

  test("decimal SI suffixes and the plain number", () => {
    assert.equal(toBytes("1"), 1);
    assert.equal(toBytes("123"), 123);
    assert.equal(toBytes("1k"), 1_000);
    assert.equal(toBytes("1M"), 1_000_000);
    assert.equal(toBytes("5G"), 5_000_000_000);
    assert.equal(toBytes("2T"), 2_000_000_000_000);
    assert.equal(toBytes("1P"), 1e15);
    assert.equal(bytesOf("1E"), 10n ** 18n, "a bare E is the exa suffix, not an exponent");
    assert.equal(toMillicores("500m"), 500);
    assert.equal(toMillicores("250000u"), 250);
    assert.equal(toMillicores("1000000n"), 1);
  });

  test("exponents, both cases and signed", () => {
    assert.equal(toBytes("1e3"), 1_000);
    assert.equal(toBytes("1E3"), 1_000);
    assert.equal(toBytes("2e+6"), 2_000_000);
    assert.equal(toBytes("12e0"), 12);
    assert.equal(toMillicores("1e-3"), 1);
    assert.equal(toMillicores("5E-1"), 500);
    assert.equal(toBytes("1.5e3"), 1_500);
  });

  test("decimals are exact", () => {
    assert.equal(toBytes("1.5Gi"), 1.5 * Gi);
    assert.equal(toBytes(".5Ki"), 512);
    assert.equal(toBytes("1."), 1);
    assert.equal(toBytes("0.25Mi"), 256 * Ki);
    assert.equal(toMillicores("0.1"), 100);
    assert.equal(toMillicores("2"), 2_000);
    assert.equal(toMillicores("1.5"), 1_500);
    assert.equal(toBytes("+1Gi"), Gi, "an explicit + sign");
    // 0.1 + 0.2 style binary-float drift cannot happen: 0.3Gi is computed from the digits.
    assert.equal(toBytes("0.3Gi"), Math.ceil((3 * Gi) / 10));
  });

  test("conversion to whole units rounds up, like Kubernetes", () => {
    assert.equal(toBytes("0.5"), 1);
    assert.equal(toBytes("1m"), 1);
    assert.equal(toBytes("1001m"), 2);
    assert.equal(toMillicores("1u"), 1);
    assert.equal(toMillicores("0.0001"), 1);
    assert.equal(toMillicores("1e-40"), 1);
    assert.equal(toMillicores("1e-200"), 1, "far below a unit still rounds up to one");
    assert.equal(ceilScaled(parseQuantity("-1.5"), 1n), -1n, "negative values round toward +∞");
  });

  test("equal sizes in different spellings compare equal in bytes", () => {
    assert.equal(toBytes("1Gi"), toBytes("1024Mi"));
    assert.equal(toBytes("1Gi"), toBytes("1073741824"));
    assert.equal(toBytes("1G"), toBytes("1e9"));
    assert.equal(toBytes("1G"), toBytes("1000M"));
    assert.ok(toBytes("1Gi") > toBytes("1G"));
  });

  for (const bad of [
    "",
    " ",
    "abc",
    "Gi",
    "1gi",
    "1GI",
    "1GB",
    "1GiB",
    "1K",
    "1ki",
    "1 Gi",
    " 1Gi",
    "1Gi ",
    "1.2.3",
    "1e",
    "1e1.5",
    "1e3Gi",
    "--1",
    "+-1",
    "1Gi1",
    ".",
    "1,5Gi",
    "0x10",
    "Infinity",
    "NaN",
    "1".repeat(65),
  ]) {
    test(`invalid: ${JSON.stringify(bad)}`, () => {
      assert.throws(() => parseQuantity(bad), QuantityError);
      assert.throws(() => toBytes(bad), QuantityError);
    });
  }

  test("sizes must be positive", () => {
    for (const text of ["0", "0Gi", "-1Gi", "-0.5", "0e3", ".0"]) {
      assert.throws(() => toBytes(text), /greater than zero/, text);
      assert.throws(() => toMillicores(text), /greater than zero/, text);
    }
    assert.equal(toBytesOrZero("0"), 0);
    assert.equal(toBytesOrZero("0Gi"), 0);
    assert.throws(() => toBytesOrZero("-1Gi"), /negative/);
  });

  test("values beyond 2^53 - 1 units are refused, not rounded", () => {
    assert.equal(toBytes("7Pi"), 7 * Pi);
    assert.equal(toBytes("9007199254740991"), Number.MAX_SAFE_INTEGER);
    assert.throws(() => toBytes("8Pi"), /too large/);
    assert.throws(() => toBytes("1Ei"), /too large/);
    assert.throws(() => toBytes("1E"), /too large/);
    assert.throws(() => toBytes("1e50"), /too large/);
    assert.throws(() => toBytes("1e999999999999"), /too large/, "a huge exponent fails fast");
    assert.throws(() => toMillicores("10T"), /too large/);
  });
});

describe("formatGi (resize and quota messages)", () => {
  test("two decimals and the Gi suffix", () => {
    assert.equal(formatGi(10 * Gi), "10.00Gi");
    assert.equal(formatGi(5 * Gi), "5.00Gi");
    assert.equal(formatGi(0), "0.00Gi");
    assert.equal(formatGi(1.5 * Gi), "1.50Gi");
    assert.equal(formatGi(500 * Mi), "0.49Gi");
    assert.equal(formatGi(toBytes("1G")), "0.93Gi");
    assert.equal(formatGi(1), "0.00Gi");
    assert.equal(formatGi(500 * Gi), "500.00Gi");
    assert.equal(formatGi(3 * Pi), "3145728.00Gi");
    assert.equal(formatGi(1n << 60n), "1073741824.00Gi");
  });

  test("exact halves round to even, like Python's %.2f", () => {
    assert.equal(formatGi(Gi / 8), "0.12Gi"); // 0.125
    assert.equal(formatGi((3 * Gi) / 8), "0.38Gi"); // 0.375
    assert.equal(formatGi((5 * Gi) / 8), "0.62Gi"); // 0.625
    assert.equal(formatGi(Gi / 8 + 1), "0.13Gi"); // just above the half
  });
});

describe("names (DNS-1035 labels, at most 63 characters)", () => {
  for (const good of ["a", "data", "data-1", "my-volume-2", "a1", "x".repeat(63), "a-b-c"]) {
    test(`valid: ${good.length > 20 ? `${good.slice(0, 8)}…(${good.length})` : good}`, () => {
      assert.equal(nameProblem(good), null);
      assert.ok(isValidName(good));
    });
  }
  for (const bad of [
    "",
    "1data",
    "-data",
    "data-",
    "Data",
    "data_1",
    "data.1",
    "data 1",
    "x".repeat(64),
    "é",
  ]) {
    test(`invalid: ${JSON.stringify(bad.length > 20 ? `${bad.slice(0, 8)}…(${bad.length})` : bad)}`, () => {
      assert.ok(nameProblem(bad));
      assert.ok(!isValidName(bad));
    });
  }
  test("the length limit is named", () => {
    assert.match(nameProblem("x".repeat(64))!, /at most 63 characters/);
  });
});

describe("storage quota from the environment", () => {
  test("default 500Gi", () => {
    assert.equal(DEFAULT_SANDBOX_STORAGE_QUOTA, "500Gi");
    assert.equal(sandboxStorageQuotaFromEnv({}), 500 * Gi);
    assert.equal(sandboxStorageQuotaFromEnv({ HANGAR_SANDBOX_STORAGE_QUOTA: "" }), 500 * Gi);
  });
  test("any quantity, zero included", () => {
    assert.equal(sandboxStorageQuotaFromEnv({ HANGAR_SANDBOX_STORAGE_QUOTA: "20Gi" }), 20 * Gi);
    assert.equal(sandboxStorageQuotaFromEnv({ HANGAR_SANDBOX_STORAGE_QUOTA: "1T" }), 1e12);
    assert.equal(sandboxStorageQuotaFromEnv({ HANGAR_SANDBOX_STORAGE_QUOTA: "0" }), 0);
  });
  test("a bad value is a ConfigError naming the variable", () => {
    assert.throws(
      () => sandboxStorageQuotaFromEnv({ HANGAR_SANDBOX_STORAGE_QUOTA: "lots" }),
      (err: Error) => err.name === "ConfigError" && /HANGAR_SANDBOX_STORAGE_QUOTA=lots/.test(err.message),
    );
    assert.throws(() => sandboxStorageQuotaFromEnv({ HANGAR_SANDBOX_STORAGE_QUOTA: "-1Gi" }), /negative/);
  });
});
