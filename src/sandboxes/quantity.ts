/**
 * Kubernetes resource quantities (`10Gi`, `500m`, `1.5`, `1e3`), parsed exactly.
 *
 * Grammar (k8s.io/apimachinery `resource.Quantity`):
 *
 *   quantity        ::= signedNumber suffix
 *   signedNumber    ::= number | ("+" | "-") number
 *   number          ::= digits | digits "." digits | digits "." | "." digits
 *   suffix          ::= binarySI | decimalSI | decimalExponent
 *   binarySI        ::= Ki | Mi | Gi | Ti | Pi | Ei                       (2^10 … 2^60)
 *   decimalSI       ::= n | u | m | "" | k | M | G | T | P | E            (10^-9 … 10^18)
 *   decimalExponent ::= ("e" | "E") signedInteger                         (1e3, 1E-3, 2e+6)
 *
 * `1E` is exa (the suffix), `1E3` an exponent. No whitespace, no `K`, no `KB`/`GiB`, no lowercase
 * binary suffixes. Values are kept as exact fractions (BigInt) so `1.5Gi`, `0.1` CPU or `1e-3` never
 * meet floating point; converting to a whole number of bytes or millicores rounds **up**, like
 * Kubernetes' `Value()` / `MilliValue()`.
 */

export class QuantityError extends Error {
  override name = "QuantityError";
}

/** An exact rational value: sign × num / den, with num ≥ 0 and den > 0. */
export interface Quantity {
  readonly text: string;
  readonly negative: boolean;
  readonly num: bigint;
  readonly den: bigint;
}

const BINARY: Record<string, bigint> = {
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
};

/** Powers of ten of the decimal SI suffixes ("" is the plain number). */
const DECIMAL: Record<string, number> = { n: -9, u: -6, m: -3, "": 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };

const SHAPE = /^([+-]?)(\d+\.?\d*|\.\d+)(?:([eE])([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$/;

/** Longest accepted text; keeps the exact arithmetic (10^exponent) small. */
const MAX_LENGTH = 64;
/** Beyond these decimal exponents a non-zero value is certainly out of any range we accept / below one unit. */
const MAX_EXP = 40;
const MIN_EXP = -120;

/** Hint shown with every parse error. */
export const QUANTITY_HINT =
  "a Kubernetes quantity such as 10Gi, 512Mi, 500m, 1.5 or 1e3 (binary suffixes Ki Mi Gi Ti Pi Ei, decimal suffixes n u m k M G T P E)";

export function parseQuantity(text: string): Quantity {
  if (typeof text !== "string" || text.length === 0) throw new QuantityError("must not be empty");
  if (text.length > MAX_LENGTH) throw new QuantityError(`must be at most ${MAX_LENGTH} characters`);
  const m = SHAPE.exec(text);
  if (!m) throw new QuantityError(`'${text}' is not ${QUANTITY_HINT}`);
  const [, sign, number, expMark, expDigits, suffix = ""] = m;
  const dot = number!.indexOf(".");
  const intPart = dot === -1 ? number! : number!.slice(0, dot);
  const fracPart = dot === -1 ? "" : number!.slice(dot + 1);
  const mantissa = BigInt(`${intPart}${fracPart}` || "0");
  // value = mantissa × 10^exp10 × binary
  let exp10 = -fracPart.length;
  let binary = 1n;
  if (expMark) exp10 += Number(expDigits);
  else if (suffix in BINARY) binary = BINARY[suffix]!;
  else exp10 += DECIMAL[suffix]!;

  if (mantissa === 0n) return { text, negative: false, num: 0n, den: 1n };
  if (exp10 > MAX_EXP) throw new QuantityError(`'${text}' is too large`);
  if (exp10 < MIN_EXP) {
    // Far below one millionth of a unit: only its sign matters once rounded up to whole units.
    return { text, negative: sign === "-", num: 1n, den: 10n ** BigInt(-MIN_EXP) };
  }
  const num = exp10 >= 0 ? mantissa * 10n ** BigInt(exp10) * binary : mantissa * binary;
  const den = exp10 >= 0 ? 1n : 10n ** BigInt(-exp10);
  return { text, negative: sign === "-", num, den };
}

/** ceil(value × scale) as a BigInt (toward +∞, as Kubernetes rounds). */
export function ceilScaled(q: Quantity, scale: bigint): bigint {
  const n = q.num * scale;
  if (q.negative) return -(n / q.den); // −floor(|x|) = ceil(x) for x ≤ 0
  return (n + q.den - 1n) / q.den;
}

/** Largest whole number of base units accepted anywhere: it must survive a JS number and SQLite INTEGER. */
export const MAX_UNITS = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * A strictly positive amount in whole base units (bytes for sizes and memory, millicores for CPU).
 * `scale` is the number of base units in one unit of the quantity (1 for bytes, 1000 for millicores).
 */
function positiveUnits(text: string, scale: bigint, what: string): number {
  const q = parseQuantity(text);
  if (q.negative || q.num === 0n) throw new QuantityError(`${what} must be greater than zero, got '${text}'`);
  const units = ceilScaled(q, scale);
  if (units > MAX_UNITS) throw new QuantityError(`'${text}' is too large (at most ${MAX_UNITS} ${what})`);
  return Number(units);
}

/** Bytes of a size or memory quantity (`10Gi` → 10737418240); > 0, fractions rounded up. */
export const toBytes = (text: string): number => positiveUnits(text, 1n, "bytes");

/** Millicores of a CPU quantity (`500m` → 500, `2` → 2000, `0.1` → 100); > 0, fractions rounded up. */
export const toMillicores = (text: string): number => positiveUnits(text, 1000n, "millicores");

/** Bytes of a quantity that may be zero (a quota); negative values are refused. */
export function toBytesOrZero(text: string): number {
  const q = parseQuantity(text);
  if (q.num === 0n) return 0;
  if (q.negative) throw new QuantityError(`must not be negative, got '${text}'`);
  const units = ceilScaled(q, 1n);
  if (units > MAX_UNITS) throw new QuantityError(`'${text}' is too large (at most ${MAX_UNITS} bytes)`);
  return Number(units);
}

const GI = 1n << 30n;

/**
 * Bytes as GiB with exactly two decimals and the `Gi` suffix (`10737418240` → `10.00Gi`,
 * 500Mi → `0.49Gi`), the format of the sandbox API's resize and quota messages. Rounds the exact
 * value half to even, as the reference server's Python `%.2f` does.
 */
export function formatGi(bytes: number | bigint): string {
  const b = BigInt(bytes);
  const negative = b < 0n;
  const abs = negative ? -b : b;
  let hundredths = (abs * 100n) / GI;
  const twiceRemainder = ((abs * 100n) % GI) * 2n;
  if (twiceRemainder > GI || (twiceRemainder === GI && hundredths % 2n === 1n)) hundredths += 1n;
  const whole = hundredths / 100n;
  const frac = (hundredths % 100n).toString().padStart(2, "0");
  return `${negative && hundredths !== 0n ? "-" : ""}${whole}.${frac}Gi`;
}
