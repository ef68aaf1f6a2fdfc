/**
 * Property-based bad-input testing of the whole HTTP API, generated from the running server's
 * `/openapi.json` (every operation: path parameters, query parameters, JSON body) with fast-check.
 *
 * For each operation it builds one arbitrary of *recipes*: malformed requests of several families
 * (wrong types, missing required fields, 1 MB strings, 2,000-level nesting, invalid ids, unknown enum
 * values, negative and huge limits, invalid JSON, wrong content types, lone surrogates and NUL bytes,
 * path traversal, very long URLs, odd headers), plus valid-looking requests built from the schema.
 * Recipes are symbolic (big payloads and real ids are placeholders), so they are small to generate and
 * the payload is built only when the request is sent; real ids come from fixtures created first (a
 * thread with a run and a checkpoint, an assistant, a cron, a store item, sandbox resources), recreated
 * when a generated DELETE removed them.
 *
 * The runner sends them with raw `node:http` (so paths go out byte for byte: no URL normalisation of
 * `../`, no client-side validation) and classifies each answer. A failure is a 5xx, no answer within
 * the timeout (streaming answers count from their headers, then the request is aborted), a connection
 * reset or refused, or a 2xx that leaks /etc/passwd. Generation is deterministic for a seed: request
 * `i` is the `⌊i / operations⌋`-th value `fc.sample` draws for operation `i mod operations` (each
 * operation's seed is derived from the run's seed and its position in the spec).
 */
import { randomUUID } from "node:crypto";
import http from "node:http";
import fc from "fast-check";
import { client, contents, human } from "./server.js";

// ---------------------------------------------------------------------------------------------------
// The spec
// ---------------------------------------------------------------------------------------------------

type Schema = Record<string, any>;

export interface Param {
  name: string;
  in: "path" | "query" | "header";
  required: boolean;
  schema: Schema;
}

export interface Operation {
  /** `METHOD /path/{param}` */
  key: string;
  method: string;
  path: string;
  pathParams: Param[];
  queryParams: Param[];
  headerParams: Param[];
  body?: { schema: Schema; required: boolean; contentType: string };
  /** Documented as answering `text/event-stream` (only informative: every answer is classified by its headers). */
  streaming: boolean;
}

export interface ApiSpec {
  doc: any;
  operations: Operation[];
  deref(schema: Schema | undefined): Schema;
}

const METHODS = ["get", "post", "put", "patch", "delete"];

/** Loads `/openapi.json` from a running server and lists every operation. */
export async function loadSpec(baseUrl: string): Promise<ApiSpec> {
  const res = await fetch(`${baseUrl}/openapi.json`);
  if (res.status !== 200) throw new Error(`GET /openapi.json answered ${res.status}`);
  return specFrom(await res.json());
}

export function specFrom(doc: any): ApiSpec {
  const deref = (schema: Schema | undefined): Schema => {
    let s: Schema = schema ?? {};
    for (let hops = 0; typeof s.$ref === "string" && hops < 20; hops++) {
      const parts = (s.$ref as string).replace(/^#\//, "").split("/");
      let target: any = doc;
      for (const part of parts) target = target?.[part.replace(/~1/g, "/").replace(/~0/g, "~")];
      s = target ?? {};
    }
    return s;
  };
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const params: Param[] = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p: any) => {
        const param = deref(p);
        return {
          name: param.name,
          in: param.in,
          required: Boolean(param.required),
          schema: deref(param.schema),
        };
      });
      const content = op.requestBody ? (deref(op.requestBody).content ?? {}) : {};
      const contentType = Object.keys(content)[0];
      const responses = Object.values<any>(op.responses ?? {});
      operations.push({
        key: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === "path"),
        queryParams: params.filter((p) => p.in === "query"),
        headerParams: params.filter((p) => p.in === "header"),
        body: contentType
          ? {
              schema: deref(content[contentType]?.schema),
              required: Boolean(deref(op.requestBody).required),
              contentType,
            }
          : undefined,
        streaming: responses.some((r) => Object.keys(deref(r).content ?? {}).includes("text/event-stream")),
      });
    }
  }
  return { doc, operations, deref };
}

// ---------------------------------------------------------------------------------------------------
// Symbolic values: built only when a request is sent
// ---------------------------------------------------------------------------------------------------

type SpecialKind =
  | "fixture" // a real id (s = fixture name, optionally `|transform`)
  | "bigString" // n × s
  | "deepObject" // {"a":{"a":…1…}} n levels
  | "deepArray" // [[[…]]] n levels
  | "deepMixed" // {"a":[{"a":[…]}]} n levels
  | "wideObject" // n keys
  | "wideArray" // n elements
  | "raw"; // s verbatim (JSON text in a body, URL text in a path or query)

export class Special {
  constructor(
    readonly kind: SpecialKind,
    readonly n: number = 0,
    readonly s: string = "",
  ) {}
}

const sp = (kind: SpecialKind, n = 0, s = "") => new Special(kind, n, s);
const raw = (s: string) => sp("raw", 0, s);
const fixture = (name: string) => sp("fixture", 0, name);

/** A string slot in a URL or header: text (percent-encoded when sent) or a symbolic value. */
export type Str = string | Special;

export interface FixtureValues {
  thread: string;
  assistant: string;
  run?: string;
  checkpoint?: string;
  cron?: string;
  storeNamespace: string[];
  storeKey: string;
  volume: string;
  template: string;
  box: string;
  boxId?: string;
  pool: string;
  graph: string;
}

const MISSING_ID = "00000000-dead-4bad-8bad-000000000000";

function fixtureValue(spec: string, fx: FixtureValues): unknown {
  const [name, transform] = spec.split("|");
  const value = (fx as unknown as Record<string, unknown>)[name!] ?? MISSING_ID;
  if (typeof value !== "string") return value;
  switch (transform) {
    case "upper":
      return value.toUpperCase();
    case "braces":
      return `{${value}}`;
    case "nohyphen":
      return value.replace(/-/g, "");
    case "suffix":
      return `${value}x`;
    case "urn":
      return `urn:uuid:${value}`;
    case "space":
      return ` ${value} `;
    case "nul":
      return `${value}\u0000`;
    case "truncated":
      return value.slice(0, -1);
    default:
      return value;
  }
}

function specialJson(v: Special, fx: FixtureValues): string {
  switch (v.kind) {
    case "fixture":
      return JSON.stringify(fixtureValue(v.s, fx)) ?? "null";
    case "bigString":
      return JSON.stringify(v.s.repeat(v.n));
    case "deepObject":
      return `${'{"a":'.repeat(v.n)}1${"}".repeat(v.n)}`;
    case "deepArray":
      return `${"[".repeat(v.n)}${"]".repeat(v.n)}`;
    case "deepMixed": {
      const half = Math.ceil(v.n / 2);
      return `${'{"a":['.repeat(half)}1${"]}".repeat(half)}`;
    }
    case "wideObject": {
      const parts: string[] = [];
      for (let i = 0; i < v.n; i++) parts.push(`"k${i}":${i}`);
      return `{${parts.join(",")}}`;
    }
    case "wideArray":
      return v.n === 0 ? "[]" : `[${"0,".repeat(v.n - 1)}0]`;
    case "raw":
      return v.s;
  }
}

function specialLabel(v: Special, fx: FixtureValues): string {
  switch (v.kind) {
    case "fixture":
      return JSON.stringify(fixtureValue(v.s, fx)) ?? "null";
    case "bigString":
      return `<${JSON.stringify(v.s)}×${v.n}>`;
    case "raw":
      return v.s.length > 200 ? `${v.s.slice(0, 200)}…<${v.s.length} chars>` : v.s;
    default:
      return `<${v.kind} ${v.n}>`;
  }
}

/** JSON text of a value tree with Specials expanded (`preview`: labelled instead). */
function renderJson(v: unknown, fx: FixtureValues, preview: boolean): string {
  const out: string[] = [];
  const walk = (x: unknown): void => {
    if (x instanceof Special) {
      out.push(preview ? specialLabel(x, fx) : specialJson(x, fx));
    } else if (Array.isArray(x)) {
      out.push("[");
      x.forEach((item, i) => {
        if (i > 0) out.push(",");
        walk(item === undefined ? null : item);
      });
      out.push("]");
    } else if (x !== null && typeof x === "object") {
      out.push("{");
      let first = true;
      for (const [k, item] of Object.entries(x)) {
        if (item === undefined) continue;
        if (!first) out.push(",");
        first = false;
        out.push(JSON.stringify(k), ":");
        walk(item);
      }
      out.push("}");
    } else {
      out.push(JSON.stringify(x) ?? "null");
    }
  };
  walk(v);
  return out.join("");
}

/** Percent-encodes text for a URL; a lone surrogate becomes its (invalid) 3-byte UTF-8 form. */
export function pctEncode(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    let out = "";
    for (const ch of s) {
      try {
        out += encodeURIComponent(ch);
      } catch {
        const c = ch.charCodeAt(0);
        const bytes = [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)];
        out += bytes.map((b) => `%${b.toString(16).toUpperCase()}`).join("");
      }
    }
    return out;
  }
}

function strForUrl(v: Str, fx: FixtureValues): string {
  if (typeof v === "string") return pctEncode(v);
  switch (v.kind) {
    case "raw":
      return v.s;
    case "fixture": {
      const value = fixtureValue(v.s, fx);
      return pctEncode(Array.isArray(value) ? value.join(".") : String(value));
    }
    case "bigString":
      return pctEncode(v.s.repeat(v.n));
    default:
      return pctEncode(specialJson(v, fx));
  }
}

/** Header values must be latin-1 without controls for node:http to send them at all. */
function strForHeader(v: Str, fx: FixtureValues): string {
  const text =
    typeof v === "string"
      ? v
      : v.kind === "fixture"
        ? String(fixtureValue(v.s, fx))
        : v.kind === "bigString"
          ? v.s.repeat(v.n)
          : specialJson(v, fx);
  return text.replace(/[^\t\x20-\x7e\x80-\xff]/g, "?");
}

// ---------------------------------------------------------------------------------------------------
// Recipes
// ---------------------------------------------------------------------------------------------------

export type BodySpec =
  | { kind: "json"; value: unknown; splice?: string }
  | { kind: "text"; text: Str }
  | { kind: "bytes"; hex: string };

export interface Recipe {
  op: string;
  family: string;
  /** What was broken, e.g. `body.metadata ← <deepObject 2000>`. */
  note: string;
  path: Record<string, Str>;
  query: [string, Str][];
  /** A `pad=xxx…` query parameter of this many characters (a very long URL), built when sent. */
  padQuery?: number;
  headers: [string, Str][];
  /** undefined: `application/json` when there is a body; null: no content-type header. */
  contentType?: string | null;
  body?: BodySpec;
}

export interface Materialized {
  method: string;
  /** Path and query, as sent. */
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** The body for reports: big parts labelled, truncated. */
  bodyPreview: string;
}

export function materialize(recipe: Recipe, op: Operation, fx: FixtureValues): Materialized {
  let path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const v = recipe.path[name];
    return v === undefined ? "" : strForUrl(v, fx);
  });
  const query = recipe.query.map(([k, v]) => `${pctEncode(k)}=${strForUrl(v, fx)}`);
  if (recipe.padQuery) query.push(`pad=${"x".repeat(recipe.padQuery)}`);
  if (query.length > 0) path += `?${query.join("&")}`;
  const headers: Record<string, string> = {};
  for (const [k, v] of recipe.headers) headers[k] = strForHeader(v, fx);
  let body: Buffer | undefined;
  let bodyPreview = "";
  if (recipe.body) {
    const b = recipe.body;
    if (b.kind === "json") {
      let text = renderJson(b.value, fx, false);
      bodyPreview = renderJson(b.value, fx, true);
      if (b.splice && text.startsWith("{")) {
        const sep = text === "{}" ? "" : ",";
        text = `{${b.splice}${sep}${text.slice(1)}`;
        bodyPreview = `{${b.splice}${sep}${bodyPreview.slice(1)}`;
      }
      body = Buffer.from(text, "utf8");
    } else if (b.kind === "text") {
      const text =
        typeof b.text === "string"
          ? b.text
          : b.text.kind === "raw"
            ? b.text.s
            : b.text.kind === "fixture"
              ? String(fixtureValue(b.text.s, fx))
              : specialJson(b.text, fx);
      body = Buffer.from(text, "utf8");
      bodyPreview = typeof b.text === "string" ? JSON.stringify(b.text) : `text ${specialLabel(b.text, fx)}`;
    } else {
      body = Buffer.from(b.hex, "hex");
      bodyPreview = `bytes 0x${b.hex}`;
    }
    const type = recipe.contentType === undefined ? "application/json" : recipe.contentType;
    if (type !== null) headers["content-type"] = type;
  } else if (recipe.contentType) {
    headers["content-type"] = recipe.contentType;
  }
  return { method: op.method, path, headers, body, bodyPreview: truncate(bodyPreview, 1500) };
}

// ---------------------------------------------------------------------------------------------------
// Arbitraries
// ---------------------------------------------------------------------------------------------------

/** Graphs whose runs end within milliseconds (not `slow`: a valid wait on it could queue for long). */
const FAST_GRAPHS = ["agent", "fail", "interrupt", "custom_state", "subgraph"];

const LONE_SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff"];

const TRICKY_STRINGS = [
  "",
  " ",
  "null",
  "undefined",
  "NaN",
  "Infinity",
  "-1",
  "0",
  "1e309",
  "0x1f",
  "true",
  "[]",
  "{}",
  "\u0000",
  "a\u0000b",
  ...LONE_SURROGATES,
  "x\ud83dy",
  "💥🔥",
  "\u202egnp.exe",
  "\ufeff",
  "\uffff",
  "𝕏",
  "İı",
  "\r\n\t",
  "../../etc/passwd",
  "..\\..\\windows\\win.ini",
  "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
  "/etc/passwd",
  "file:///etc/passwd",
  "' OR '1'='1",
  '"; DROP TABLE threads; --',
  "$(reboot)",
  "{{7*7}}",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template-injection probe, literally.
  "${7*7}",
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "%s%s%s%n",
  "\\",
  '"',
  "*",
  "%",
  "_",
  "?",
  "#",
  ".",
  "..",
  "a.b",
  "a".repeat(300),
];

/** Code units including lone surrogates and controls (fc's "binary" unit never yields a lone surrogate). */
const nastyUnit = fc.oneof(
  {
    arbitrary: fc.constantFrom(...LONE_SURROGATES, "\u0000", "\u0001", "\u007f", "\ufeff", "\uffff"),
    weight: 1,
  },
  { arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }), weight: 3 },
);

const trickyString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...TRICKY_STRINGS), weight: 4 },
  { arbitrary: fc.string({ unit: nastyUnit, maxLength: 16 }), weight: 2 },
  { arbitrary: fc.string({ unit: "grapheme", maxLength: 12 }), weight: 1 },
  { arbitrary: fc.uuid({ version: 4 }), weight: 1 },
);

const FIXTURE_NAMES = ["thread", "assistant", "run", "checkpoint", "cron", "boxId"];
const FIXTURE_TRANSFORMS = ["upper", "braces", "nohyphen", "suffix", "urn", "space", "nul", "truncated"];

/** A real id of the wrong kind, or a real id mangled (upper case, braces, no hyphens, …). */
const wrongId: fc.Arbitrary<Special> = fc.oneof(
  fc.constantFrom(...FIXTURE_NAMES).map(fixture),
  fc
    .tuple(fc.constantFrom(...FIXTURE_NAMES), fc.constantFrom(...FIXTURE_TRANSFORMS))
    .map(([name, t]) => fixture(`${name}|${t}`)),
);

const DEEP_DEPTHS = [1_100, 2_000, 2_000, 10_000, 100_000];

/** Payloads that are large or deep: 1 MB strings, 2,000-level nesting, 100k keys or elements. */
const bigValue: fc.Arbitrary<Special> = fc.oneof(
  fc
    .tuple(fc.constantFrom(1_000_000, 1_048_577), fc.constantFrom("a", "é", "💥", "\u0000", "\\", '"'))
    .map(([n, ch]) => sp("bigString", n, ch)),
  fc.constantFrom(...DEEP_DEPTHS).map((n) => sp("deepObject", n)),
  fc.constantFrom(...DEEP_DEPTHS).map((n) => sp("deepArray", n)),
  fc.constantFrom(...DEEP_DEPTHS).map((n) => sp("deepMixed", n)),
  fc.constantFrom(10_000, 100_000).map((n) => sp("wideObject", n)),
  fc.constantFrom(10_000, 200_000).map((n) => sp("wideArray", n)),
);

/** JSON texts JSON.stringify never writes: lone-surrogate and NUL escapes, huge and odd numbers. */
const rawJsonScalar: fc.Arbitrary<Special> = fc
  .constantFrom(
    '"\\ud800"',
    '"a\\udfffb"',
    '"\\u0000"',
    '"a\\u0000b"',
    "1e999",
    "-1e999",
    "-0",
    "123456789012345678901234567890",
    "0.0000000000000000000000000001",
    "9007199254740993",
    '"\\u202e"',
  )
  .map(raw);

const badScalar: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.constantFrom(
    -1,
    0,
    -2147483649,
    2 ** 31,
    2 ** 53,
    2 ** 64,
    1e308,
    -1e308,
    0.5,
    -0.000001,
    Number.MAX_SAFE_INTEGER,
  ),
  fc.integer(),
  fc.double(),
  trickyString,
  rawJsonScalar,
  wrongId,
);

/** A value that is wrong for most fields: a wrong type, a big or deep payload, odd text. */
const badValue: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: badScalar, weight: 6 },
  { arbitrary: bigValue, weight: 3 },
  { arbitrary: fc.constantFrom([], {}, [null], [[]], [{}], { "": null }), weight: 1 },
  { arbitrary: fc.array(badScalar, { maxLength: 4 }), weight: 1 },
  { arbitrary: fc.dictionary(trickyString, badScalar, { maxKeys: 3 }), weight: 1 },
);

/** Path segments that are not ids: traversal (raw and encoded), broken escapes, NULs, huge. */
const RAW_PATH_GARBAGE = [
  "",
  ".",
  "..",
  "../../etc/passwd",
  "..%2F..%2F..%2Fetc%2Fpasswd",
  "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
  "%2e%2e",
  "%2E%2E%2F",
  "..%5c..%5cwindows",
  "%c0%ae%c0%ae%2f",
  "%00",
  "a%00b",
  "%zz",
  "%",
  "%%",
  "%ED%A0%80",
  "%FF%FE",
  "%2F",
  "%20",
  "+",
  "~",
  "*",
  ";x=1",
  "a;b",
  "%3F%23",
  "%7B%7D",
];

const badPathValue: fc.Arbitrary<Str> = fc.oneof(
  { arbitrary: fc.constantFrom(...RAW_PATH_GARBAGE).map(raw), weight: 4 },
  { arbitrary: trickyString, weight: 3 },
  { arbitrary: wrongId, weight: 2 },
  { arbitrary: fc.uuid({ version: 4 }), weight: 1 },
  {
    arbitrary: fc.constantFrom(
      "00000000-0000-0000-0000-000000000000",
      "ffffffff-ffff-ffff-ffff-ffffffffffff",
    ),
    weight: 1,
  },
  {
    arbitrary: fc
      .tuple(fc.constantFrom(2_000, 8_000, 20_000, 70_000), fc.constantFrom("a", "é", "%"))
      .map(([n, ch]) => sp("bigString", n, ch)),
    weight: 1,
  },
);

const BAD_QUERY_VALUES = [
  "-1",
  "-9999999999",
  "0",
  "99999999999999999999",
  "9007199254740993",
  "1e309",
  "NaN",
  "Infinity",
  "1.5",
  "0x10",
  " 1",
  "1 ",
  "+1",
  "",
  "true",
  "bogus",
  "__proto__",
  "[]",
  "{}",
  "null",
  "1,2",
];

const badQueryValue: fc.Arbitrary<Str> = fc.oneof(
  { arbitrary: fc.constantFrom(...BAD_QUERY_VALUES), weight: 4 },
  { arbitrary: trickyString, weight: 2 },
  {
    arbitrary: fc.constantFrom("%00", "%zz", "%", "%ED%A0%80", "%2e%2e%2f", "a%26b%3Dc", "%FF").map(raw),
    weight: 1,
  },
  { arbitrary: wrongId, weight: 1 },
  { arbitrary: fc.constantFrom(5_000, 100_000).map((n) => sp("bigString", n, "9")), weight: 1 },
);

const INVALID_JSON_TEXTS = [
  "",
  " ",
  "{",
  "}",
  "[",
  '{"a":}',
  '{"a":1,}',
  "[1,2",
  "nul",
  "NaN",
  "undefined",
  "{'a':1}",
  "\ufeff{}",
  '{"a":1}garbage',
  '{"a":1}{"b":2}',
  '{"a":"\\x41"}',
  '{"a":"unterminated}',
  '{"a":01}',
  '{"a":.5}',
  '{"a":1e}',
  '{"\u0000":1}',
  "\u0000",
  "//comment\n{}",
  '{"limit":1,"limit":"x"}',
  "true",
  "1",
  '"string"',
  "null",
];

const invalidJsonBody: fc.Arbitrary<BodySpec> = fc.oneof(
  {
    arbitrary: fc.constantFrom(...INVALID_JSON_TEXTS).map((text): BodySpec => ({ kind: "text", text })),
    weight: 6,
  },
  {
    arbitrary: fc
      .constantFrom(
        `${"[".repeat(100_000)}`,
        `${'{"a":'.repeat(50_000)}`,
        " ".repeat(2_000_000),
        `"${"a".repeat(1_000_000)}`,
      )
      .map((s): BodySpec => ({ kind: "text", text: raw(s) })),
    weight: 1,
  },
  {
    // Invalid UTF-8: a stray continuation byte, an overlong NUL, CESU-8 surrogate, a truncated sequence.
    arbitrary: fc
      .constantFrom(
        "7b2261223a2280227d",
        "7b2261223a22c080227d",
        "7b2261223a22eda080227d",
        "7b2261223a22e282",
        "fffe7b7d",
      )
      .map((hex): BodySpec => ({ kind: "bytes", hex })),
    weight: 2,
  },
  {
    arbitrary: fc
      .string({ unit: nastyUnit, maxLength: 40 })
      .map((text): BodySpec => ({ kind: "text", text })),
    weight: 2,
  },
);

const WRONG_CONTENT_TYPES: (string | null)[] = [
  null,
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=xyz",
  "application/xml",
  "application/json; charset=utf-16",
  "application/json; charset=latin1",
  "application/jsonx",
  "application/octet-stream",
  "*/*",
  "application/json, text/plain",
  "application/merge-patch+json",
  "",
  "json",
  `application/json; x=${"a".repeat(4000)}`,
];

const HEADER_MUTATIONS: fc.Arbitrary<[string, Str][]> = fc.oneof(
  fc.tuple(fc.constant("last-event-id"), fc.oneof(badQueryValue, trickyString)).map((h) => [h]),
  fc
    .constantFrom("text/event-stream", "*/*", "application/xml", "bogus/../..", "", "text/html;q=abc")
    .map((v): [string, Str][] => [["accept", v]]),
  fc.tuple(fc.constantFrom("x-api-key", "authorization"), trickyString).map((h) => [h]),
  fc.constantFrom("gzip", "br", "deflate", "bogus").map((v): [string, Str][] => [["content-encoding", v]]),
  // `x-*` headers are copied into a run's configurable.
  fc
    .tuple(
      fc.constantFrom("x-fuzz", "x-thread-id", "x-run-id", "x-__proto__"),
      fc.oneof(trickyString, bigValue),
    )
    .map((h) => [h]),
  fc.constantFrom(2_000, 12_000, 40_000).map((n): [string, Str][] => [["x-big", sp("bigString", n, "h")]]),
  fc.constant<[string, Str][]>([["origin", "http://evil.example"]]),
);

type Path = (string | number)[];

function isFreeObject(s: Schema): boolean {
  return s.type === "object" && !s.properties && s.additionalProperties !== false;
}

/** Every field path a body schema names (nested objects, array items, free-form maps), depth-limited. */
function fieldPaths(spec: ApiSpec, schema: Schema, prefix: Path = [], depth = 0, out: Path[] = []): Path[] {
  if (depth > 4) return out;
  const s = spec.deref(schema);
  for (const alt of [...(s.anyOf ?? []), ...(s.oneOf ?? []), ...(s.allOf ?? [])])
    fieldPaths(spec, alt, prefix, depth + 1, out);
  if (s.properties) {
    for (const [k, sub] of Object.entries<Schema>(s.properties)) {
      out.push([...prefix, k]);
      fieldPaths(spec, sub, [...prefix, k], depth + 1, out);
    }
  }
  if (isFreeObject(s) || (s.type === "object" && s.additionalProperties && s.properties))
    out.push([...prefix, "x"]);
  if (s.type === "array") {
    if (s.items && typeof s.items === "object") {
      out.push([...prefix, 0]);
      fieldPaths(spec, s.items, [...prefix, 0], depth + 1, out);
    }
    (s.prefixItems ?? []).forEach((item: Schema, i: number) => {
      out.push([...prefix, i]);
      fieldPaths(spec, item, [...prefix, i], depth + 1, out);
    });
  }
  return out;
}

/** Every field path of a body schema with the schema found there (alternatives each), depth-limited. */
function schemaPaths(
  spec: ApiSpec,
  schema: Schema,
  prefix: Path = [],
  depth = 0,
  out: [Path, Schema][] = [],
): [Path, Schema][] {
  if (depth > 4) return out;
  const s = spec.deref(schema);
  out.push([prefix, s]);
  for (const alt of [...(s.anyOf ?? []), ...(s.oneOf ?? []), ...(s.allOf ?? [])])
    schemaPaths(spec, alt, prefix, depth + 1, out);
  for (const [k, sub] of Object.entries<Schema>(s.properties ?? {}))
    schemaPaths(spec, sub, [...prefix, k], depth + 1, out);
  if (s.type === "array" && s.items && typeof s.items === "object")
    schemaPaths(spec, s.items, [...prefix, 0], depth + 1, out);
  return out;
}

const admitsString = (s: Schema) =>
  s.type === "string" || (Array.isArray(s.type) && s.type.includes("string"));

/** The paths of a body where a string goes, and those of free-form objects (metadata, filters, …). */
function sweepPaths(spec: ApiSpec, schema: Schema): { strings: Path[]; objects: Path[] } {
  const pairs = schemaPaths(spec, schema).filter(([path]) => path.length > 0);
  return {
    strings: uniquePaths(pairs.filter(([, s]) => admitsString(s)).map(([p]) => p)),
    objects: uniquePaths(pairs.filter(([, s]) => isFreeObject(s)).map(([p]) => p)),
  };
}

/** The key the fixtures' metadata and store values hold a scalar at, and the one thread values hold a list at. */
export const SHAPE_KEYS = ["fz", "messages"];

/** Values of every shape for a filter's key: each meets rows holding a scalar, an array or an object there. */
const FILTER_SHAPES: unknown[] = [
  [1],
  [],
  { a: 1 },
  {},
  { a: [1] },
  [{ a: 1 }],
  null,
  1.5,
  "s",
  true,
  Array(2_000).fill(1), // compared element by element: past the filter's condition limit
];

/** Path and query parameters get this many characters: near the most a URL takes below the 16 KiB head. */
const BIG_URL_TEXT = 15_000;
const BIG_BODY_TEXT = 1_000_000;

/** Paths of required fields (to delete), depth-limited. */
function requiredPaths(
  spec: ApiSpec,
  schema: Schema,
  prefix: Path = [],
  depth = 0,
  out: Path[] = [],
): Path[] {
  if (depth > 4) return out;
  const s = spec.deref(schema);
  for (const alt of [...(s.anyOf ?? []), ...(s.oneOf ?? []), ...(s.allOf ?? [])])
    requiredPaths(spec, alt, prefix, depth + 1, out);
  for (const k of s.required ?? []) out.push([...prefix, k]);
  for (const [k, sub] of Object.entries<Schema>(s.properties ?? {}))
    requiredPaths(spec, sub, [...prefix, k], depth + 1, out);
  if (s.type === "array" && s.items && typeof s.items === "object")
    requiredPaths(spec, s.items, [...prefix, 0], depth + 1, out);
  return out;
}

function uniquePaths(paths: Path[]): Path[] {
  const seen = new Map<string, Path>();
  for (const p of paths) seen.set(JSON.stringify(p), p);
  return [...seen.values()];
}

function clone<T>(v: T): T {
  if (v instanceof Special) return v;
  if (Array.isArray(v)) return v.map(clone) as T;
  if (v !== null && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, item] of Object.entries(v)) out[k] = clone(item);
    return out as T;
  }
  return v;
}

/** Sets (or deletes, with `value === undefined`) a nested field, creating containers on the way. */
function setPath(root: unknown, path: Path, value: unknown): unknown {
  if (path.length === 0) return value;
  const top: any =
    root !== null && typeof root === "object" && !(root instanceof Special)
      ? clone(root)
      : typeof path[0] === "number"
        ? []
        : {};
  let node: any = top;
  for (let i = 0; i < path.length - 1; i++) {
    const key = path[i]!;
    const next = node[key];
    if (next === null || typeof next !== "object" || next instanceof Special) {
      if (value === undefined) return top;
      node[key] = typeof path[i + 1] === "number" ? [] : {};
    }
    node = node[key];
  }
  const last = path[path.length - 1]!;
  if (value === undefined) {
    if (Array.isArray(node) && typeof last === "number") node.splice(last, 1);
    else delete node[last];
  } else {
    node[last] = value;
  }
  return top;
}

const fmtPath = (p: Path) => (p.length === 0 ? "body" : `body.${p.join(".")}`);

function describeValue(v: unknown): string {
  if (v instanceof Special) return v.kind === "fixture" ? `<id ${v.s}>` : specialLabel(v, EMPTY_FIXTURES);
  const text = renderJson(v, EMPTY_FIXTURES, true);
  return truncate(text, 80);
}

const EMPTY_FIXTURES: FixtureValues = {
  thread: "<thread>",
  assistant: "<assistant>",
  storeNamespace: ["<ns>"],
  storeKey: "<key>",
  volume: "<volume>",
  template: "<template>",
  box: "<box>",
  pool: "<pool>",
  graph: "agent",
};

/** Builds arbitraries for one spec; `valid*` are values that satisfy the schema, with real ids. */
export class RequestArbitraries {
  constructor(readonly spec: ApiSpec) {}

  /** A valid-looking value for a schema; `name` is the field's name (ids, names, sizes get real ones). */
  valid(schema: Schema | undefined, name = "", depth = 0): fc.Arbitrary<unknown> {
    const s = this.spec.deref(schema);
    if (depth > 8) return fc.constant(null);
    const named = this.#named(name, s);
    if (named) return named;
    if ("const" in s) return fc.constant(s.const);
    if (Array.isArray(s.enum) && s.enum.length > 0) return fc.constantFrom(...s.enum);
    const alts: Schema[] | undefined = s.anyOf ?? s.oneOf;
    if (alts && alts.length > 0) return fc.oneof(...alts.map((a) => this.valid(a, name, depth + 1)));
    if (Array.isArray(s.type)) {
      return fc.oneof(...s.type.map((t: string) => this.valid({ ...s, type: t }, name, depth)));
    }
    switch (s.type) {
      case "null":
        return fc.constant(null);
      case "boolean":
        return fc.boolean();
      case "integer": {
        const min = Math.max(
          s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : 0),
          -1e6,
        );
        const max = Math.min(s.maximum ?? min + 100, min + 100);
        return fc.integer({ min, max });
      }
      case "number": {
        const min = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 0.001 : 0);
        const max = Math.min(s.maximum ?? min + 100, min + 100);
        return fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
      }
      case "string":
        return this.#string(s);
      case "array": {
        if (Array.isArray(s.prefixItems)) {
          return fc.tuple(...s.prefixItems.map((item: Schema) => this.valid(item, `${name}[]`, depth + 1)));
        }
        const minLength = s.minItems ?? 0;
        const maxLength = Math.max(minLength, Math.min(s.maxItems ?? 3, 3));
        return fc.array(this.valid(s.items, `${name}[]`, depth + 1), { minLength, maxLength });
      }
      case "object": {
        if (s.properties && Object.keys(s.properties).length > 0) {
          const model: Record<string, fc.Arbitrary<unknown>> = {};
          for (const [k, sub] of Object.entries<Schema>(s.properties))
            model[k] = this.valid(sub, k, depth + 1);
          const requiredKeys = (s.required ?? []).filter((k: string) => k in model);
          return fc.record(model, { requiredKeys }) as fc.Arbitrary<unknown>;
        }
        return fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 });
      }
      default:
        return anyJson;
    }
  }

  #named(name: string, s: Schema): fc.Arbitrary<unknown> | undefined {
    const stringy = s.type === "string" || (Array.isArray(s.type) && s.type.includes("string"));
    switch (name) {
      case "thread_id":
        return fc.oneof({ arbitrary: fc.constant(fixture("thread")), weight: 3 }, fc.uuid({ version: 4 }));
      case "assistant_id":
        return fc.oneof(fc.constant(fixture("assistant")), fc.constantFrom(...FAST_GRAPHS));
      case "run_id":
      case "run_ids[]":
        return fc.oneof({ arbitrary: fc.constant(fixture("run")), weight: 3 }, fc.uuid({ version: 4 }));
      case "checkpoint_id":
        return fc.oneof(
          { arbitrary: fc.constant(fixture("checkpoint")), weight: 3 },
          fc.uuid({ version: 4 }),
          fc.constant(null),
        );
      case "cron_id":
        return fc.constant(fixture("cron"));
      case "graph_id":
        return fc.constantFrom(...FAST_GRAPHS);
      case "namespace":
      case "namespace_prefix":
      case "prefix":
        return fc.constant(fixture("storeNamespace"));
      case "key":
        return fc.constant(fixture("storeKey"));
      case "template_name":
        return fc.constant(fixture("template"));
      case "volume_name":
        return fc.constant(fixture("volume"));
      case "name":
        return stringy ? fc.stringMatching(/^fz-[a-z0-9]{1,8}$/) : undefined;
      case "size":
      case "cpu":
      case "memory":
      case "storage":
        return fc.constantFrom("1Gi", "10Mi", "500m", "1", "1.5G", "1e3");
      case "image":
        return fc.constant("hangar/host");
      case "mount_path":
        return fc.constantFrom("/data", "/mnt/x");
      case "schedule":
        return fc.constantFrom("0 0 1 1 *", "30 4 1 1 *");
      case "timezone":
        return fc.constantFrom("UTC", "Europe/Paris", null);
      case "end_time":
        return fc.constantFrom("2099-01-01T00:00:00Z", null);
      case "webhook":
        return fc.constantFrom("http://127.0.0.1:9/hook", null);
      case "after_seconds":
        return fc.constantFrom(0, null);
      case "timeout":
        return fc.integer({ min: s.minimum ?? 1, max: (s.minimum ?? 1) + 2 });
      case "recursion_limit":
        return fc.integer({ min: 1, max: 50 });
      case "replicas":
        return fc.constant(1);
      case "ttl_seconds":
      case "idle_ttl_seconds":
        // Short, never 0 (no TTL): where bubblewrap is installed the sandboxes really start.
        return fc.integer({ min: 10, max: 60 });
      case "limit":
        return fc.integer({ min: 1, max: 20 });
      case "offset":
        return fc.integer({ min: 0, max: 5 });
      case "input":
        return fc.oneof(fc.constant(human("fuzz")), fc.jsonValue({ maxDepth: 2 }), fc.constant(null));
      case "command":
        return stringy ? fc.constantFrom("echo hi", "true") : undefined;
      case "shell":
        return fc.constant("/bin/sh");
      case "cwd":
      case "path":
        return fc.constantFrom("/tmp", "/tmp/fuzz.txt");
      case "method":
        return stringy && !s.enum
          ? fc.constantFrom(
              "initialize",
              "ping",
              "tools/list",
              "tools/call",
              "notifications/initialized",
              "bogus/x",
            )
          : undefined;
      case "before":
        return stringy ? fc.constant(fixture("checkpoint")) : undefined;
      default:
        return undefined;
    }
  }

  #string(s: Schema): fc.Arbitrary<unknown> {
    if (s.format === "uuid") return fc.uuid({ version: 4 });
    if (s.format === "uri") return fc.constant("http://127.0.0.1:9/hook");
    if (s.pattern === "^\\/.*") return fc.constant("/hook");
    if (s.format === "date-time") return fc.constant(new Date(Date.UTC(2030, 0, 1)).toISOString());
    const minLength = s.minLength ?? 0;
    return fc.string({ minLength, maxLength: Math.max(minLength, 12) });
  }

  /** A valid path parameter: a real id (mutating methods get only the fixtures, never a shared default). */
  #pathValue(op: Operation, param: Param): fc.Arbitrary<Str> {
    const mutating = op.method !== "GET";
    switch (param.name) {
      case "thread_id":
        return fc.constant(fixture("thread"));
      case "assistant_id":
        return mutating
          ? fc.constant(fixture("assistant"))
          : fc.oneof(fc.constant(fixture("assistant")), fc.constantFrom(...FAST_GRAPHS));
      case "run_id":
        return fc.constant(fixture("run"));
      case "checkpoint_id":
        return fc.constant(fixture("checkpoint"));
      case "cron_id":
        return fc.constant(fixture("cron"));
      case "id":
        return fc.constant(fixture("boxId"));
      case "namespace":
        return fc.constantFrom("child", "", "a|b");
      case "asset":
        return fc.constantFrom("swagger-ui.css", "swagger-ui-bundle.js", "index.css", "favicon-32x32.png");
      case "name": {
        if (op.path.includes("/volumes/")) return fc.constant(fixture("volume"));
        if (op.path.includes("/templates/")) return fc.constant(fixture("template"));
        if (op.path.includes("/pools/")) return fc.constant(fixture("pool"));
        return fc.constant(fixture("box"));
      }
      default:
        return this.valid(param.schema, param.name) as fc.Arbitrary<Str>;
    }
  }

  #validPath(op: Operation): fc.Arbitrary<Record<string, Str>> {
    const model: Record<string, fc.Arbitrary<Str>> = {};
    for (const p of op.pathParams) model[p.name] = this.#pathValue(op, p);
    return fc.record(model);
  }

  #validQuery(op: Operation): fc.Arbitrary<[string, Str][]> {
    if (op.queryParams.length === 0) return fc.constant([]);
    return fc
      .tuple(
        ...op.queryParams.map((p) =>
          fc.tuple(
            fc.constant(p.name),
            this.valid(p.schema, p.name) as fc.Arbitrary<unknown>,
            p.required ? fc.constant(true) : fc.boolean(),
          ),
        ),
      )
      .map((entries) =>
        entries
          .filter(([, v, present]) => present && v !== null && v !== undefined)
          .map(([k, v]): [string, Str] => [k, v instanceof Special ? v : String(v)]),
      );
  }

  #validBody(op: Operation): fc.Arbitrary<unknown> {
    if (!op.body) return fc.constant(undefined);
    return this.valid(op.body.schema, "");
  }

  /** Odd common headers, and bad values for the header parameters the operation documents. */
  #headerMutations(op: Operation): fc.Arbitrary<[string, Str][]> {
    if (op.headerParams.length === 0) return HEADER_MUTATIONS;
    const documented = fc
      .tuple(fc.constantFrom(...op.headerParams.map((p) => p.name)), fc.oneof(badQueryValue, trickyString))
      .map((h): [string, Str][] => [h]);
    return fc.oneof(HEADER_MUTATIONS, documented);
  }

  /**
   * The sweep, not drawn at random: from one schema-valid request, every string field of the body set to
   * 1 MB, every path and query parameter to BIG_URL_TEXT characters, and on searches, counts and
   * history every filter (a free-form object) given a 1 MB key and each of FILTER_SHAPES at each of
   * SHAPE_KEYS.
   */
  sweep(op: Operation, seed: number): Recipe[] {
    const [b] = fc.sample(
      fc.record({ path: this.#validPath(op), query: this.#validQuery(op), body: this.#validBody(op) }),
      { seed, numRuns: 1 },
    );
    const base = b!;
    const recipe = (family: string, note: string, extra: Partial<Recipe>): Recipe => ({
      op: op.key,
      family,
      note,
      path: base.path,
      query: base.query,
      headers: [],
      body: op.body ? { kind: "json", value: base.body ?? {} } : undefined,
      ...extra,
    });
    const withBody = (path: Path, value: unknown, from: unknown = base.body): Partial<Recipe> => ({
      body: { kind: "json", value: setPath(from ?? {}, path, value) },
    });
    // A filter alone (with the required fields only): no other condition may leave the rows out first.
    const required = new Set<string>(this.spec.deref(op.body?.schema).required ?? []);
    const bare =
      base.body !== null && typeof base.body === "object"
        ? Object.fromEntries(Object.entries(base.body).filter(([k]) => required.has(k)))
        : {};
    const out: Recipe[] = [];
    if (op.body) {
      const { strings, objects } = sweepPaths(this.spec, op.body.schema);
      for (const path of strings)
        out.push(
          recipe(
            "sweep-size",
            `${fmtPath(path)} ← 1 MB string`,
            withBody(path, sp("bigString", BIG_BODY_TEXT, "a")),
          ),
        );
      const isFilter = /\/(search|count|history)$/.test(op.path);
      for (const path of isFilter ? objects : []) {
        out.push(
          recipe(
            "sweep-size",
            `${fmtPath(path)} ← a 1 MB key`,
            withBody([...path, "k".repeat(BIG_BODY_TEXT)], 1),
          ),
        );
        for (const key of SHAPE_KEYS)
          for (const shape of FILTER_SHAPES)
            out.push(
              recipe(
                "sweep-shape",
                `${fmtPath([...path, key])} ← ${JSON.stringify(shape)}`,
                withBody([...path, key], shape, bare),
              ),
            );
      }
    }
    for (const p of op.pathParams)
      out.push(
        recipe("sweep-size", `{${p.name}} ← ${BIG_URL_TEXT} characters`, {
          path: { ...base.path, [p.name]: sp("bigString", BIG_URL_TEXT, "a") },
        }),
      );
    for (const p of op.queryParams.filter((q) => admitsString(this.spec.deref(q.schema))))
      out.push(
        recipe("sweep-size", `?${p.name} ← ${BIG_URL_TEXT} characters`, {
          query: [...base.query.filter(([k]) => k !== p.name), [p.name, sp("bigString", BIG_URL_TEXT, "a")]],
        }),
      );
    return out;
  }

  /** All requests generated for one operation. */
  operation(op: Operation): fc.Arbitrary<Recipe> {
    const base = fc.record({
      path: this.#validPath(op),
      query: this.#validQuery(op),
      body: this.#validBody(op),
    });
    const recipe = (
      b: { path: Record<string, Str>; query: [string, Str][]; body: unknown },
      family: string,
      note: string,
      extra: Partial<Recipe> = {},
    ): Recipe => ({
      op: op.key,
      family,
      note,
      path: b.path,
      query: b.query,
      headers: [],
      body: op.body && b.body !== undefined ? { kind: "json", value: b.body } : undefined,
      ...extra,
    });
    const families: { arbitrary: fc.Arbitrary<Recipe>; weight: number }[] = [];
    families.push({ arbitrary: base.map((b) => recipe(b, "valid", "schema-valid values")), weight: 2 });

    if (op.body) {
      const paths = uniquePaths([[], ...fieldPaths(this.spec, op.body.schema)]);
      families.push({
        weight: 6,
        arbitrary: fc
          .tuple(base, fc.constantFrom(...paths), badValue)
          .map(([b, path, bad]) =>
            recipe(
              { ...b, body: setPath(b.body ?? {}, path, bad) },
              "body-field",
              `${fmtPath(path)} ← ${describeValue(bad)}`,
            ),
          ),
      });
      const required = uniquePaths(requiredPaths(this.spec, op.body.schema));
      families.push({
        weight: 1,
        arbitrary:
          required.length > 0
            ? fc
                .tuple(base, fc.constantFrom(...required))
                .map(([b, path]) =>
                  recipe(
                    { ...b, body: setPath(b.body ?? {}, path, undefined) },
                    "body-missing",
                    `${fmtPath(path)} removed`,
                  ),
                )
            : base.map((b) => recipe({ ...b, body: {} }, "body-missing", "empty object body")),
      });
      families.push({
        weight: 1,
        arbitrary: fc
          .tuple(
            base,
            fc.oneof(
              fc.constantFrom(
                '"__proto__":{"polluted":true}',
                '"constructor":{"prototype":{"polluted":true}}',
                '"__proto__":null',
                '"x-unknown":1',
                '"":""',
              ),
              fc
                .tuple(trickyString, fc.jsonValue({ maxDepth: 1 }))
                .map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v) ?? "null"}`),
            ),
          )
          .map(([b, splice]) => {
            const r = recipe(b, "body-extra", `extra key ${truncate(splice, 60)}`);
            r.body = {
              kind: "json",
              value: b.body !== null && typeof b.body === "object" ? b.body : {},
              splice,
            };
            return r;
          }),
      });
      families.push({
        weight: 1,
        arbitrary: fc
          .tuple(
            base,
            fc.oneof(
              { arbitrary: badScalar, weight: 4 },
              { arbitrary: bigValue, weight: 4 },
              // Past the 32 MiB body limit.
              { arbitrary: fc.constant(sp("bigString", 33 * 1024 * 1024, "a")), weight: 1 },
            ),
          )
          .map(([b, bad]) => recipe({ ...b, body: bad }, "body-shape", `body ← ${describeValue(bad)}`)),
      });
      families.push({
        weight: 2,
        arbitrary: fc
          .tuple(base, invalidJsonBody)
          .map(([b, body]) => recipe(b, "body-invalid-json", "invalid JSON", { body })),
      });
      families.push({
        weight: 1,
        arbitrary: fc.tuple(base, fc.constantFrom(...WRONG_CONTENT_TYPES)).map(([b, type]) =>
          recipe(
            b,
            "content-type",
            `content-type ${type === null ? "absent" : JSON.stringify(truncate(type, 40))}`,
            {
              contentType: type,
              body: { kind: "json", value: b.body ?? {} },
            },
          ),
        ),
      });
    } else {
      families.push({
        weight: 1,
        arbitrary: fc
          .tuple(
            base,
            fc.oneof(
              invalidJsonBody,
              badValue.map((value): BodySpec => ({ kind: "json", value })),
            ),
          )
          .map(([b, body]) => recipe(b, "unexpected-body", "a body where none is expected", { body })),
      });
    }

    if (op.pathParams.length > 0) {
      families.push({
        weight: 4,
        arbitrary: fc
          .tuple(base, fc.constantFrom(...op.pathParams.map((p) => p.name)), badPathValue)
          .map(([b, name, bad]) =>
            recipe(
              { ...b, path: { ...b.path, [name]: bad } },
              "path-param",
              `{${name}} ← ${typeof bad === "string" ? JSON.stringify(truncate(bad, 60)) : describeValue(bad)}`,
            ),
          ),
      });
    }

    const queryNames = op.queryParams.map((p) => p.name);
    const knownNames = [...new Set([...queryNames, "limit", "offset", "status", "namespace", "wait"])];
    families.push({
      weight: op.queryParams.length > 0 ? 3 : 1,
      arbitrary: fc
        .tuple(
          base,
          fc.constantFrom(...(queryNames.length > 0 ? queryNames : knownNames)),
          badQueryValue,
          fc.constantFrom("replace", "duplicate", "add-unknown", "remove-required"),
        )
        .map(([b, name, bad, how]) => {
          const others = b.query.filter(([k]) => k !== name);
          const required = op.queryParams.filter((p) => p.required).map((p) => p.name);
          switch (how) {
            case "duplicate":
              return recipe(
                { ...b, query: [...b.query, [name, bad], [name, "1"]] },
                "query",
                `?${name} twice`,
              );
            case "add-unknown":
              return recipe(
                { ...b, query: [...b.query, [`unknown_${name}`, bad], ["__proto__[x]", "1"]] },
                "query",
                "unknown query parameters",
              );
            case "remove-required":
              if (required.length > 0)
                return recipe(
                  { ...b, query: b.query.filter(([k]) => !required.includes(k)) },
                  "query",
                  `required ?${required.join(",")} removed`,
                );
              return recipe(
                { ...b, query: [...others, [name, bad]] },
                "query",
                `?${name} ← ${describeValue(bad)}`,
              );
            default:
              return recipe(
                { ...b, query: [...others, [name, bad]] },
                "query",
                `?${name} ← ${describeValue(bad)}`,
              );
          }
        }),
    });

    families.push({
      weight: 1,
      arbitrary: fc
        .tuple(base, fc.constantFrom(8_000, 15_000, 17_000, 64_000, 1_000_000))
        .map(([b, n]) => recipe(b, "long-url", `URL with a ${n}-character query string`, { padQuery: n })),
    });

    families.push({
      weight: 1,
      arbitrary: fc.tuple(base, this.#headerMutations(op)).map(([b, headers]) =>
        recipe(b, "headers", `headers ${headers.map(([k]) => k).join(",")}`, {
          headers,
        }),
      ),
    });

    return fc.oneof(...families);
  }
}

const anyJson: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 2 });

// ---------------------------------------------------------------------------------------------------
// Fixtures: real ids so that requests get past "not found"
// ---------------------------------------------------------------------------------------------------

async function call(
  baseUrl: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: any }> {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, json };
}

/** The fixtures' metadata (and store value) hold a scalar at the sweep's first shape key. */
const SCALAR_METADATA = { [SHAPE_KEYS[0]!]: "scalar" };

export class Fixtures {
  readonly values: FixtureValues;
  /** Problems met while (re)creating fixtures: they make requests 404 more, they are not failures. */
  readonly problems: string[] = [];
  #running: Promise<void> | undefined;

  constructor(readonly baseUrl: string) {
    this.values = {
      thread: randomUUID(),
      assistant: randomUUID(),
      storeNamespace: ["fuzz", "ns"],
      storeKey: "item",
      volume: "fuzz-vol",
      template: "fuzz-tpl",
      box: "fuzz-box",
      pool: "fuzz-pool",
      graph: "agent",
    };
  }

  /** Creates whatever fixture is missing (idempotent; concurrent calls share one pass). */
  ensure(): Promise<void> {
    this.#running ??= this.#ensure().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #step(what: string, fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (error) {
      if (this.problems.length < 50) this.problems.push(`${what}: ${(error as Error).message}`);
    }
  }

  async #ensure(): Promise<void> {
    const v = this.values;
    const u = this.baseUrl;
    await this.#step("assistant", async () => {
      if ((await call(u, "GET", `/assistants/${v.assistant}`)).status === 200) return;
      const res = await call(u, "POST", "/assistants", {
        assistant_id: v.assistant,
        graph_id: "agent",
        name: "fuzz-assistant",
        metadata: SCALAR_METADATA,
        if_exists: "do_nothing",
      });
      if (res.status !== 200) throw new Error(`POST /assistants → ${res.status}`);
    });
    await this.#step("thread", async () => {
      let fresh = false;
      if ((await call(u, "GET", `/threads/${v.thread}`)).status !== 200) {
        const res = await call(u, "POST", "/threads", {
          thread_id: v.thread,
          metadata: SCALAR_METADATA,
          if_exists: "do_nothing",
        });
        if (res.status !== 200) throw new Error(`POST /threads → ${res.status}`);
        fresh = true;
      }
      let runOk = !fresh && v.run !== undefined;
      if (runOk) runOk = (await call(u, "GET", `/threads/${v.thread}/runs/${v.run}`)).status === 200;
      if (!runOk) {
        const runs = await call(u, "GET", `/threads/${v.thread}/runs?limit=1`);
        const existing = Array.isArray(runs.json) ? runs.json[0]?.run_id : undefined;
        if (existing) v.run = existing;
        else {
          const res = await call(u, "POST", `/threads/${v.thread}/runs/wait`, {
            assistant_id: "agent",
            input: human("fixture"),
            metadata: SCALAR_METADATA,
            multitask_strategy: "enqueue",
          });
          if (res.status !== 200)
            throw new Error(
              `POST /threads/{id}/runs/wait → ${res.status} ${truncate(JSON.stringify(res.json), 200)}`,
            );
          const after = await call(u, "GET", `/threads/${v.thread}/runs?limit=1`);
          v.run = Array.isArray(after.json) ? after.json[0]?.run_id : undefined;
        }
      }
      const state = await call(u, "GET", `/threads/${v.thread}/state`);
      const checkpoint = state.json?.checkpoint?.checkpoint_id;
      if (typeof checkpoint === "string") v.checkpoint = checkpoint;
    });
    await this.#step("cron", async () => {
      const found = await call(u, "POST", "/runs/crons/search", { thread_id: v.thread, limit: 5 });
      if (v.cron && Array.isArray(found.json) && found.json.some((c: any) => c.cron_id === v.cron)) return;
      if (Array.isArray(found.json) && found.json[0]?.cron_id) {
        v.cron = found.json[0].cron_id;
        return;
      }
      const body = {
        assistant_id: "agent",
        schedule: "0 0 1 1 *",
        input: human("cron"),
        metadata: SCALAR_METADATA,
      };
      let res = await call(u, "POST", `/threads/${v.thread}/runs/crons`, body);
      if (res.status !== 200) res = await call(u, "POST", "/runs/crons", body);
      if (typeof res.json?.cron_id !== "string") throw new Error(`POST /runs/crons → ${res.status}`);
      v.cron = res.json.cron_id;
    });
    await this.#step("store item", async () => {
      const q = `namespace=${v.storeNamespace.join(".")}&key=${v.storeKey}`;
      if ((await call(u, "GET", `/store/items?${q}`)).status === 200) return;
      const res = await call(u, "PUT", "/store/items", {
        namespace: v.storeNamespace,
        key: v.storeKey,
        value: { fuzz: true, ...SCALAR_METADATA },
      });
      if (res.status >= 300) throw new Error(`PUT /store/items → ${res.status}`);
    });
    await this.#step("volume", async () => {
      if ((await call(u, "GET", `/v2/sandboxes/volumes/${v.volume}`)).status === 200) return;
      const res = await call(u, "POST", "/v2/sandboxes/volumes", { name: v.volume, size: "1Gi" });
      if (res.status >= 300) throw new Error(`POST /v2/sandboxes/volumes → ${res.status}`);
    });
    await this.#step("template", async () => {
      if ((await call(u, "GET", `/v2/sandboxes/templates/${v.template}`)).status === 200) return;
      const res = await call(u, "POST", "/v2/sandboxes/templates", {
        name: v.template,
        image: "hangar/host",
        resources: { cpu: "500m", memory: "256Mi" },
        volume_mounts: [{ volume_name: v.volume, mount_path: "/data" }],
      });
      if (res.status >= 300) throw new Error(`POST /v2/sandboxes/templates → ${res.status}`);
    });
    await this.#step("sandbox", async () => {
      let got = await call(u, "GET", `/v2/sandboxes/boxes/${v.box}`);
      if (got.status !== 200) {
        // Without bubblewrap the sandbox is recorded as failed (503); its name and id still exist.
        await call(u, "POST", "/v2/sandboxes/boxes", { template_name: v.template, name: v.box });
        got = await call(u, "GET", `/v2/sandboxes/boxes/${v.box}`);
      }
      if (typeof got.json?.id === "string") v.boxId = got.json.id;
    });
    await this.#step("pool", async () => {
      if ((await call(u, "GET", `/v2/sandboxes/pools/${v.pool}`)).status === 200) return;
      await call(u, "POST", "/v2/sandboxes/pools", { name: v.pool, template_name: v.template, replicas: 1 });
    });
  }
}

/**
 * Runs still `pending` or `running` more than `olderThanMs` after they were created, on busy threads:
 * the example graphs finish within milliseconds, so such a run is stuck (what a hung wait waits for).
 */
export async function stuckRuns(baseUrl: string, olderThanMs: number): Promise<string[]> {
  const out: string[] = [];
  try {
    const busy = await call(baseUrl, "POST", "/threads/search", { status: "busy", limit: 1000 });
    for (const thread of Array.isArray(busy.json) ? busy.json : []) {
      const runs = await call(baseUrl, "GET", `/threads/${thread.thread_id}/runs?limit=100`);
      for (const run of Array.isArray(runs.json) ? runs.json : []) {
        if (run.status !== "pending" && run.status !== "running") continue;
        const age = Date.now() - Date.parse(run.created_at);
        if (!(age > olderThanMs)) continue;
        out.push(
          `run ${run.run_id} on thread ${thread.thread_id}: ${run.status} for ${(age / 1000).toFixed(0)} s ` +
            `(assistant ${run.assistant_id}, multitask ${run.multitask_strategy}, kwargs ${truncate(JSON.stringify(run.kwargs ?? null), 300)})`,
        );
      }
    }
  } catch (error) {
    out.push(`(could not list stuck runs: ${(error as Error).message})`);
  }
  return out;
}

/** For a request on `/threads/{uuid}/…`: that thread's status and its latest runs. */
async function threadRuns(baseUrl: string, path: string): Promise<string[]> {
  const id = /^\/threads\/([0-9a-f-]{36})(?:\/|$|\?)/i.exec(path)?.[1];
  if (!id) return [];
  try {
    const thread = await call(baseUrl, "GET", `/threads/${id}`);
    const runs = await call(baseUrl, "GET", `/threads/${id}/runs?limit=10`);
    const list = Array.isArray(runs.json)
      ? runs.json.map(
          (r: any) => `${r.run_id} ${r.status} (${r.multitask_strategy}, created ${r.created_at})`,
        )
      : [];
    return [
      `thread ${id}: ${thread.status === 200 ? thread.json?.status : `GET → ${thread.status}`}; latest runs: ${list.join("; ") || "none"}`,
    ];
  } catch (error) {
    return [`(could not read thread ${id}: ${(error as Error).message})`];
  }
}

// ---------------------------------------------------------------------------------------------------
// Sending
// ---------------------------------------------------------------------------------------------------

export interface Outcome {
  status?: number;
  /** A transport problem: `timeout …`, `ECONNRESET`, … */
  error?: string;
  contentType?: string;
  /** The first bytes of the answer. */
  body: string;
  ms: number;
  /**
   * The request line + headers exceeded Node's 16 KiB limit: the server answers 431 and closes at
   * once, so while the client is still writing them the answer may be lost to a reset.
   */
  oversizedHead?: boolean;
}

/** Node's default --max-http-header-size. */
const MAX_HEAD_BYTES = 16 * 1024;

function headBytes(req: Materialized): number {
  let n = req.method.length + req.path.length + 12;
  for (const [k, v] of Object.entries(req.headers)) n += k.length + v.length + 4;
  return n;
}

const MAX_BODY_READ = 8 * 1024 * 1024;

/** One request with node:http on its own socket (so a socket the server closed cannot poison the next one). */
export function send(baseUrl: string, req: Materialized, timeoutMs: number): Promise<Outcome> {
  const url = new URL(baseUrl);
  const started = Date.now();
  return new Promise<Outcome>((resolve) => {
    let settled = false;
    let status: number | undefined;
    let contentType: string | undefined;
    const chunks: Buffer[] = [];
    let kept = 0;
    const finish = (error?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({
        status,
        error,
        contentType,
        body: Buffer.concat(chunks).toString("utf8"),
        ms: Date.now() - started,
        oversizedHead: headBytes(req) > MAX_HEAD_BYTES,
      });
    };
    let request: http.ClientRequest;
    // `keep-alive` as real clients send it (the server then drains a body it did not read instead of
    // closing on it); `agent: false` still gives every request its own socket, closed after the answer.
    const headers: Record<string, string | number> = { ...req.headers, connection: "keep-alive" };
    if (req.body) headers["content-length"] = req.body.length;
    try {
      request = http.request({
        hostname: url.hostname,
        port: url.port,
        method: req.method,
        path: req.path,
        headers,
        agent: false,
      });
    } catch (error) {
      // The client refused to build the request (e.g. a character node:http will not send).
      settled = true;
      resolve({ error: `client: ${(error as Error).message}`, body: "", ms: 0 });
      return;
    }
    const timer = setTimeout(() => {
      finish(
        status === undefined
          ? `timeout: no response within ${timeoutMs} ms`
          : `timeout: body not finished within ${timeoutMs} ms`,
      );
      request.destroy();
    }, timeoutMs);
    // Once the answer is in, the socket may still fail (the server closed on the rest of a body it
    // refused): that error has no request left to land on and must not crash this process.
    request.on("socket", (socket) => socket.on("error", () => {}));
    request.on("response", (res) => {
      status = res.statusCode;
      contentType = res.headers["content-type"];
      if ((contentType ?? "").includes("text/event-stream")) {
        // A stream: only the status matters.
        res.destroy();
        finish();
        return;
      }
      let total = 0;
      res.on("data", (chunk: Buffer) => {
        total += chunk.length;
        if (kept < 4096) {
          chunks.push(chunk);
          kept += chunk.length;
        }
        if (total > MAX_BODY_READ) {
          res.destroy();
          finish();
        }
      });
      res.on("end", () => finish());
      res.on("error", (e) => finish(status === undefined ? errorCode(e) : undefined));
      res.on("close", () => finish());
    });
    request.on("error", (e) => {
      // An answer already received wins over a reset while we were still uploading the body.
      finish(status === undefined ? errorCode(e) : undefined);
    });
    if (req.body) request.end(req.body);
    else request.end();
  });
}

function errorCode(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  return err.code ? `${err.code}: ${err.message}` : String(err.message ?? err);
}

// ---------------------------------------------------------------------------------------------------
// The runner
// ---------------------------------------------------------------------------------------------------

export interface RunOptions {
  baseUrl: string;
  /** How many requests to send. */
  requests: number;
  /** Default: HANGAR_FUZZ_SEED or DEFAULT_SEED. */
  seed?: number;
  /** Requests in flight at once; default 8. */
  concurrency?: number;
  /** Per request; default 15 s. */
  timeoutMs?: number;
  /** The spec; default: loaded from the server. */
  spec?: ApiSpec;
  /** The server's output so far (for the log lines of a failure). */
  logs?: () => string;
  /** False once the server process has exited: the run stops there. */
  alive?: () => boolean;
  /** Only operations whose key contains one of these. */
  only?: string[];
  /** Only these request indices (to replay failures); generation still runs in the same order. */
  replay?: number[];
  /** Called every `progressEvery` (default 1,000) requests. */
  onProgress?: (done: number, total: number) => void;
  progressEvery?: number;
  /** How long to let runs end before listing stuck ones; default 3,000 ms (0: no such check). */
  settleMs?: number;
  /** Extra context for a timeout, e.g. the database's sessions and locks at that moment. */
  diagnose?: () => Promise<string[]>;
  /** Fixtures are checked (and recreated) every this many requests; default 100. */
  fixtureEvery?: number;
  /**
   * Send the sweep first (`RequestArbitraries.sweep`: every string field oversized, every filter in
   * every value shape), then the `requests` drawn at random. Sweep requests have negative indices.
   */
  sweep?: boolean;
}

export interface Failure {
  index: number;
  op: string;
  family: string;
  note: string;
  method: string;
  url: string;
  body: string;
  status?: number;
  error?: string;
  response: string;
  ms: number;
  logLines: string[];
  /** For a timeout: runs stuck pending/running at that moment, and what `diagnose` adds. */
  stuck?: string[];
}

export interface BadInputReport {
  seed: number;
  requested: number;
  /** Requests sent, the sweep's included. */
  sent: number;
  /** Of which the sweep's. */
  swept: number;
  durationMs: number;
  operations: number;
  byStatus: Record<string, number>;
  byFamily: Record<string, Record<string, number>>;
  byOperation: Record<string, Record<string, number>>;
  failures: Failure[];
  /** `error`-level server log lines seen during the run that no failure claimed (deduplicated). */
  serverErrors: { line: string; count: number }[];
  fixtureProblems: string[];
  /** Answer times: percentiles over all requests, and the slowest few. */
  latency: { p50: number; p95: number; p99: number; max: number };
  slowest: { ms: number; index: number; op: string; family: string; note: string; status: string }[];
  /** Runs still pending/running a few seconds after the last request (they should all have ended). */
  stuckRuns: string[];
  /** Set when the server process died. */
  crashed?: string;
}

export const DEFAULT_SEED = 20_241_125;

export function seedFromEnv(): number {
  const env = process.env.HANGAR_FUZZ_SEED;
  return env && /^-?\d+$/.test(env) ? Number(env) : DEFAULT_SEED;
}

/** fast-check wants a 32-bit seed per stream; one per operation, derived from the run's seed. */
function opSeed(seed: number, index: number): number {
  return (Math.imul(seed ^ 0x5bd1e995, 31) + Math.imul(index + 1, 0x9e3779b1)) | 0;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function truncate(s: string, max: number): string {
  if (s.length <= max) return s;
  return `${s.slice(0, max)}…(+${s.length - max} chars)`;
}

/**
 * Server log lines at warn/error level written since `from`, those naming the path first (stack
 * newlines, escaped in the log, restored). The raw lines picked are added to `claimed`.
 */
function logLinesFor(
  all: string,
  from: number,
  method: string,
  pathname: string,
  claimed: Set<string>,
): string[] {
  const lines = all
    .slice(from)
    .split("\n")
    .filter((l) => / (error|warn) /.test(l.slice(0, 40)));
  let decoded = pathname;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {}
  const forms = [
    `path=${pathname}`,
    `path=${decoded}`,
    `path=${JSON.stringify(decoded)}`,
    `path=${JSON.stringify(pathname)}`,
  ];
  const errors = lines.filter((l) => / error /.test(l.slice(0, 40)));
  const mine = errors.filter((l) => l.includes(`method=${method}`) && forms.some((f) => l.includes(f)));
  const picked =
    mine.length > 0 ? mine.slice(0, 3) : errors.length > 0 ? errors.slice(0, 3) : lines.slice(0, 3);
  for (const l of picked) claimed.add(l);
  return picked.map(prettyLogLine);
}

const prettyLogLine = (l: string) => truncate(l.replace(/\\n/g, "\n"), 3000);

/**
 * The one documented 5xx that is not a defect: a sandbox that failed to start (no bubblewrap on the
 * host, an image that is not there) is `503 {"detail": {"error": "SandboxConfig" | "ImagePull"}}`.
 */
function documented5xx(o: Outcome): boolean {
  return o.status === 503 && /"error":"(SandboxConfig|ImagePull)"/.test(o.body);
}

/** Status label for counts: `200`, `422`, `timeout`, `ECONNRESET`, … */
function outcomeLabel(o: Outcome): string {
  if (documented5xx(o)) return "503 (sandbox failed to start, documented)";
  if (resetOnOversizedHead(o)) return "reset (head over 16 KiB)";
  if (o.status !== undefined && !o.error) return String(o.status);
  return (o.error ?? "error").split(":")[0]!;
}

/** A reset while sending a request head over the limit: the 431 the server sent was lost, not a defect. */
function resetOnOversizedHead(o: Outcome): boolean {
  return Boolean(o.oversizedHead && o.error && /^(ECONNRESET|EPIPE)/.test(o.error));
}

export function isFailure(o: Outcome): boolean {
  if (resetOnOversizedHead(o)) return false;
  if (o.error) return !o.error.startsWith("client:");
  if (documented5xx(o)) return false;
  return (o.status ?? 0) >= 500 || (o.status! < 300 && /root:x?:0:0:/.test(o.body));
}

export async function runBadInputs(opts: RunOptions): Promise<BadInputReport> {
  const seed = opts.seed ?? seedFromEnv();
  const spec = opts.spec ?? (await loadSpec(opts.baseUrl));
  const concurrency = opts.concurrency ?? 8;
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const operations = spec.operations.filter(
    (op) => !opts.only || opts.only.some((needle) => op.key.includes(needle)),
  );
  if (operations.length === 0) throw new Error("no operation matches");
  const arbitraries = new RequestArbitraries(spec);
  const last = opts.replay ? Math.max(...opts.replay) + 1 : opts.requests;
  const perOp = Math.ceil(last / operations.length);
  // Recipes are symbolic (big payloads are built when sent), so generating them all up front is cheap.
  const samples = operations.map((op) =>
    fc.sample(arbitraries.operation(op), { seed: opSeed(seed, spec.operations.indexOf(op)), numRuns: perOp }),
  );
  const fixtures = new Fixtures(opts.baseUrl);
  await fixtures.ensure();

  const report: BadInputReport = {
    seed,
    requested: opts.requests,
    sent: 0,
    swept: 0,
    durationMs: 0,
    operations: operations.length,
    byStatus: {},
    byFamily: {},
    byOperation: {},
    failures: [],
    serverErrors: [],
    fixtureProblems: fixtures.problems,
    latency: { p50: 0, p95: 0, p99: 0, max: 0 },
    slowest: [],
    stuckRuns: [],
  };
  const times: number[] = [];
  const logStart = opts.logs?.().length ?? 0;
  const claimedLogLines = new Set<string>();
  const started = Date.now();
  const replay = opts.replay ? new Set(opts.replay) : undefined;
  let next = 0;
  const progressEvery = opts.progressEvery ?? 1_000;
  const fixtureEvery = opts.fixtureEvery ?? 100;

  const sweep = opts.sweep
    ? operations.flatMap((op) =>
        arbitraries.sweep(op, opSeed(seed, spec.operations.indexOf(op))).map((recipe) => ({ op, recipe })),
      )
    : [];
  let nextSwept = 0;
  const take = (): { index: number; op: Operation; recipe: Recipe } | undefined => {
    if (nextSwept < sweep.length && !replay) {
      report.swept++;
      return { index: -1 - nextSwept, ...sweep[nextSwept++]! };
    }
    while (next < last) {
      const index = next++;
      const opIndex = index % operations.length;
      const recipe = samples[opIndex]![Math.floor(index / operations.length)];
      if (!recipe || (replay && !replay.has(index))) continue;
      return { index, op: operations[opIndex]!, recipe };
    }
    return undefined;
  };

  const count = (table: Record<string, Record<string, number>>, key: string, label: string) => {
    table[key] ??= {};
    const row = table[key]!;
    row[label] = (row[label] ?? 0) + 1;
  };

  const worker = async () => {
    for (;;) {
      if (report.crashed) return;
      const job = take();
      if (!job) return;
      if (job.index !== 0 && Math.abs(job.index) % fixtureEvery === 0) await fixtures.ensure();
      const req = materialize(job.recipe, job.op, fixtures.values);
      const logFrom = opts.logs?.().length ?? 0;
      const outcome = await send(opts.baseUrl, req, timeoutMs);
      report.sent++;
      const label = outcomeLabel(outcome);
      times.push(outcome.ms);
      if (report.slowest.length < 10 || outcome.ms > report.slowest[report.slowest.length - 1]!.ms) {
        report.slowest.push({
          ms: outcome.ms,
          index: job.index,
          op: job.op.key,
          family: job.recipe.family,
          note: job.recipe.note,
          status: label,
        });
        report.slowest.sort((a, b) => b.ms - a.ms);
        report.slowest.length = Math.min(report.slowest.length, 10);
      }
      report.byStatus[label] = (report.byStatus[label] ?? 0) + 1;
      count(report.byFamily, job.recipe.family, label);
      count(report.byOperation, job.op.key, label);
      if (isFailure(outcome)) {
        if (opts.alive && !opts.alive()) {
          report.crashed = `the server process exited (last request: ${req.method} ${truncate(req.path, 200)})`;
        }
        await sleep(200); // let the server write its log line
        const pathname = req.path.split("?")[0]!;
        const logLines = opts.logs
          ? logLinesFor(opts.logs(), logFrom, req.method, pathname, claimedLogLines)
          : [];
        report.failures.push({
          index: job.index,
          op: job.op.key,
          family: job.recipe.family,
          note: job.recipe.note,
          method: req.method,
          url: truncate(req.path, 300),
          body: req.bodyPreview,
          status: outcome.status,
          error: outcome.error,
          response: truncate(outcome.body, 500),
          ms: outcome.ms,
          logLines,
          stuck: outcome.error?.startsWith("timeout")
            ? [
                ...(await threadRuns(opts.baseUrl, req.path)),
                ...(await stuckRuns(opts.baseUrl, 5_000)),
                ...(await (opts.diagnose?.().catch((e) => [`diagnose failed: ${e.message}`]) ?? [])),
              ]
            : undefined,
        });
      }
      if (report.sent % progressEvery === 0) opts.onProgress?.(report.sent, opts.requests);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  report.durationMs = Date.now() - started;
  const settleMs = opts.settleMs ?? 3_000;
  if (!report.crashed && settleMs > 0) {
    await sleep(settleMs);
    report.stuckRuns = await stuckRuns(opts.baseUrl, 5_000);
  }
  times.sort((a, b) => a - b);
  const pct = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? 0;
  report.latency = { p50: pct(0.5), p95: pct(0.95), p99: pct(0.99), max: times[times.length - 1] ?? 0 };

  if (opts.logs) {
    await sleep(200);
    const errors = new Map<string, number>();
    for (const line of opts.logs().slice(logStart).split("\n")) {
      if (!/^\S+ error /.test(line) || claimedLogLines.has(line)) continue;
      const short = truncate(line.replace(/^\S+ /, "").replace(/\\n/g, "\n"), 1500);
      errors.set(short, (errors.get(short) ?? 0) + 1);
    }
    report.serverErrors = [...errors].map(([line, n]) => ({ line, count: n }));
  }
  return report;
}

// ---------------------------------------------------------------------------------------------------
// After the run
// ---------------------------------------------------------------------------------------------------

/** Throws unless GET /ok is 200 and a thread + `runs.wait` of the agent graph works through the SDK. */
export async function checkHealthy(baseUrl: string): Promise<void> {
  const ok = await fetch(`${baseUrl}/ok`, { signal: AbortSignal.timeout(15_000) });
  if (ok.status !== 200) throw new Error(`GET /ok answered ${ok.status} after the bad inputs`);
  const sdk = client(baseUrl);
  const work = (async () => {
    const thread = await sdk.threads.create();
    const out = await sdk.runs.wait(thread.thread_id, "agent", { input: human("still alive?") });
    const got = contents(out);
    if (!got.includes("echo: still alive?")) {
      throw new Error(
        `runs.wait of "agent" after the bad inputs returned ${JSON.stringify(out).slice(0, 500)}`,
      );
    }
  })();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error("create thread + runs.wait took over 30 s after the bad inputs")),
      30_000,
    );
  });
  try {
    await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function statusLine(counts: Record<string, number>): string {
  return Object.entries(counts)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, n]) => `${k}: ${n}`)
    .join(", ");
}

/** The failures grouped by operation + status + first log line, with one full example each. */
export function groupFailures(
  failures: Failure[],
): { key: string; count: number; example: Failure; indices: number[] }[] {
  const groups = new Map<string, { key: string; count: number; example: Failure; indices: number[] }>();
  for (const f of failures) {
    // The error message of the first log line (paths and times vary between requests of one group).
    const first = (f.logLines[0] ?? "").split("\n")[0]!;
    const message = /error="([^"\\]*(?:\\.[^"\\]*)*)/.exec(first)?.[1] ?? first.replace(/^\S+ /, "");
    const key = `${f.op} → ${f.status ?? f.error?.split(":")[0]}${message ? ` ${message.slice(0, 160)}` : ""}`;
    const g = groups.get(key);
    if (g) {
      g.count++;
      if (g.indices.length < 10) g.indices.push(f.index);
    } else groups.set(key, { key, count: 1, example: f, indices: [f.index] });
  }
  return [...groups.values()].sort((a, b) => b.count - a.count);
}

export function formatFailure(f: Failure): string {
  const lines = [
    `#${f.index} ${f.method} ${f.url}`,
    `  operation: ${f.op}  family: ${f.family}  (${f.note})`,
    `  body: ${f.body || "(none)"}`,
    `  answer: ${f.status !== undefined ? `HTTP ${f.status}` : ""}${f.error ? ` ${f.error}` : ""} after ${f.ms} ms${f.response ? `: ${truncate(f.response, 300)}` : ""}`,
  ];
  for (const l of f.logLines)
    lines.push(
      `  server log${f.error ? " (in the window, maybe unrelated)" : ""}: ${l.replace(/\n/g, "\n    ")}`,
    );
  for (const r of f.stuck ?? []) lines.push(`  at that moment: ${r}`);
  return lines.join("\n");
}

export function formatReport(r: BadInputReport, opts: { byOperation?: boolean } = {}): string {
  const out: string[] = [];
  out.push(
    `bad-input run: seed ${r.seed} (HANGAR_FUZZ_SEED=${r.seed} to reproduce), ${r.sent - r.swept}/${r.requested} requests${r.swept ? ` after a sweep of ${r.swept}` : ""} over ${r.operations} operations in ${(r.durationMs / 1000).toFixed(1)} s`,
  );
  out.push(`by status: ${statusLine(r.byStatus)}`);
  out.push("by family:");
  for (const [family, counts] of Object.entries(r.byFamily).sort())
    out.push(`  ${family}: ${statusLine(counts)}`);
  if (opts.byOperation) {
    out.push("by operation:");
    for (const [op, counts] of Object.entries(r.byOperation).sort())
      out.push(`  ${op}: ${statusLine(counts)}`);
  }
  const l = r.latency;
  out.push(`answer times: p50 ${l.p50} ms, p95 ${l.p95} ms, p99 ${l.p99} ms, max ${l.max} ms; slowest:`);
  for (const x of r.slowest.slice(0, opts.byOperation ? 10 : 3))
    out.push(`  ${x.ms} ms #${x.index} ${x.op} → ${x.status} (${x.family}: ${truncate(x.note, 100)})`);
  if (r.crashed) out.push(`SERVER CRASHED: ${r.crashed}`);
  if (r.fixtureProblems.length > 0) out.push(`fixture problems: ${r.fixtureProblems.slice(0, 5).join("; ")}`);
  if (r.failures.length > 0) {
    const groups = groupFailures(r.failures);
    out.push(`${r.failures.length} failures (5xx, hangs, resets) in ${groups.length} groups:`);
    for (const g of groups) {
      out.push(
        `- ${g.count}× ${g.key}  (requests ${g.indices.join(", ")}${g.count > g.indices.length ? ", …" : ""})`,
      );
      out.push(formatFailure(g.example).replace(/^/gm, "    "));
    }
  } else {
    out.push("no failures: no 5xx, no hang, no reset");
  }
  if (r.stuckRuns.length > 0) {
    out.push(`${r.stuckRuns.length} runs still pending/running 3 s after the last request:`);
    for (const x of r.stuckRuns.slice(0, 20)) out.push(`  ${x}`);
  }
  if (r.serverErrors.length > 0) {
    out.push(`server error log lines not tied to a failed request (${r.serverErrors.length} distinct):`);
    for (const e of r.serverErrors.slice(0, 20)) out.push(`  ${e.count}× ${e.line.replace(/\n/g, "\n    ")}`);
  }
  return out.join("\n");
}
