/**
 * langgraph.json `checkpointer` and `webhooks` as loadConfig resolves them, and the webhook URL policy
 * (src/runtime/runs/webhook-policy.ts) rule by rule.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { type Config, ConfigError, loadConfig, type WebhookUrlPolicy } from "../../src/config/index.js";
import { HangarError } from "../../src/errors.js";
import { checkWebhookUrl } from "../../src/runtime/runs/webhook-policy.js";

/** A langgraph.json header template: `${{ <expr> }}`. */
const ref = (expr: string) => `\${{ ${expr} }}`;

const roots: string[] = [];
after(() => {
  for (const dir of roots) rmSync(dir, { recursive: true, force: true });
});

function load(extra: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): Config {
  const dir = mkdtempSync(path.join(tmpdir(), "hangar-sections-"));
  roots.push(dir);
  writeFileSync(path.join(dir, "agent.ts"), "export const graph = {};\n");
  writeFileSync(
    path.join(dir, "langgraph.json"),
    JSON.stringify({ graphs: { agent: "./agent.ts:graph" }, ...extra }),
  );
  return loadConfig({ mode: "dev", flags: {}, env, cwd: dir });
}

function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.message;
  }
  throw new Error("expected a ConfigError");
}

describe("checkpointer", () => {
  test("ttl: defaults (delete, every 5 minutes, 1000 per batch); no default_ttl = none", () => {
    const none = { sweepIntervalMinutes: 5, sweepLimit: 1000 };
    assert.deepEqual(load({}).threadTtl, none);
    assert.deepEqual(load({ checkpointer: { ttl: {} } }).threadTtl, none);
    assert.deepEqual(load({ checkpointer: { ttl: { default_ttl: 60 } } }).threadTtl.default, {
      strategy: "delete",
      minutes: 60,
    });
    assert.deepEqual(
      load({
        checkpointer: {
          ttl: { strategy: "keep_latest", default_ttl: 43200, sweep_interval_minutes: 0.5, sweep_limit: 10 },
        },
      }).threadTtl,
      { default: { strategy: "keep_latest", minutes: 43200 }, sweepIntervalMinutes: 0.5, sweepLimit: 10 },
    );
    assert.deepEqual(load({ checkpointer: { ttl: null } }).threadTtl, none);
  });

  test("serde and the default backend load silently; unknown keys and other backends are warnings", () => {
    const quiet = load({ checkpointer: { backend: "default", serde: { pickle_fallback: true }, ttl: {} } });
    assert.deepEqual(quiet.warnings, []);
    const noisy = load({ checkpointer: { path: "./cp.py:make", ttl: { default_tll: 5 } } });
    assert.match(noisy.warnings.join("\n"), /checkpointer\.ttl\.default_tll: unknown setting; ignored/);
    assert.match(noisy.warnings.join("\n"), /checkpointer: custom checkpointer backends are not supported/);
  });

  test("bad values name their field", () => {
    assert.match(
      configError(() => load({ checkpointer: "x" })),
      /: checkpointer: must be an object/,
    );
    assert.match(
      configError(() => load({ checkpointer: { ttl: { sweep_interval_minutes: -1 } } })),
      /checkpointer\.ttl\.sweep_interval_minutes: must be more than 0 minutes/,
    );
    assert.match(
      configError(() => load({ checkpointer: { ttl: { default_ttl: "1d" } } })),
      /checkpointer\.ttl\.default_ttl: must be a number of minutes/,
    );
  });
});

describe("webhooks", () => {
  test("a url policy gets the official defaults; headers are rendered at load", () => {
    const config = load(
      {
        webhooks: {
          headers: { "X-Key": `k=${ref("env.LG_WEBHOOK_KEY")};v=${ref("env.LG_WEBHOOK_V")}`, Plain: "p" },
          url: {},
          allowed_fields: ["run_id"],
        },
        env: { LG_WEBHOOK_V: "from-file", LG_WEBHOOK_KEY: "file-loses" },
      },
      { LG_WEBHOOK_KEY: "from-env" },
    );
    assert.deepEqual(config.webhooks, {
      headers: { "X-Key": "k=from-env;v=from-file", Plain: "p" },
      url: {
        requireHttps: true,
        allowedDomains: [],
        allowedPorts: [],
        maxUrlLength: 2048,
        disableLoopback: false,
        disablePrivateIps: false,
      },
      allowedFields: ["run_id"],
    });
    assert.deepEqual(load({ webhooks: {} }).webhooks, { headers: {} });
    assert.deepEqual(load({}).webhooks, undefined);
  });

  test("env_prefix bounds the variables templates may read; an empty prefix allows any", () => {
    const headers = { A: `${ref("env.HOME_X")}` };
    assert.match(
      configError(() => load({ webhooks: { env_prefix: "MY_", headers } }, { HOME_X: "1" })),
      /webhooks\.headers\.A: environment variable HOME_X must start with webhooks\.env_prefix "MY_"/,
    );
    assert.deepEqual(load({ webhooks: { env_prefix: "", headers } }, { HOME_X: "1" }).webhooks?.headers, {
      A: "1",
    });
    assert.match(
      configError(() => load({ webhooks: { headers: { A: `${ref("secrets.X")}` } } })),
      /webhooks\.headers\.A: only \$\{\{ env\.VAR \}\} references are allowed/,
    );
    assert.match(
      configError(() => load({ webhooks: { env_prefix: null } })),
      /webhooks\.env_prefix: must be a string/,
    );
    assert.match(
      configError(() => load({ webhooks: { headers: { "Bad Name": "x" } } })),
      /webhooks\.headers\["Bad Name"\]: not a valid HTTP header name/,
    );
  });

  test("unknown keys are warnings", () => {
    const config = load({ webhooks: { url: { require_http: false }, signing: {} } });
    assert.match(config.warnings.join("\n"), /webhooks\.url\.require_http: unknown setting; ignored/);
    assert.match(config.warnings.join("\n"), /webhooks\.signing: unknown setting; ignored/);
  });
});

describe("webhook URL policy", () => {
  const policy = (over: Partial<WebhookUrlPolicy> = {}): WebhookUrlPolicy => ({
    requireHttps: true,
    allowedDomains: [],
    allowedPorts: [],
    maxUrlLength: 2048,
    disableLoopback: false,
    disablePrivateIps: false,
    ...over,
  });
  const dns: Record<string, string[]> = {
    "hooks.example.com": ["93.184.216.34"],
    "inside.example.com": ["10.1.2.3"],
    "meta.example.com": ["169.254.169.254"],
    "sneaky.example.com": ["93.184.216.34", "::ffff:127.0.0.1"],
  };
  const resolve = async (host: string) => {
    const found = dns[host];
    if (!found) throw new Error("ENOTFOUND");
    return found;
  };
  const ok = (url: string, p: WebhookUrlPolicy | undefined) => checkWebhookUrl(url, p, resolve);
  const refused = async (url: string, p: WebhookUrlPolicy, rule: RegExp) => {
    await assert.rejects(checkWebhookUrl(url, p, resolve), (err: unknown) => {
      assert.ok(err instanceof HangarError && err.kind === "validation", String(err));
      assert.match(err.message, rule);
      return true;
    });
  };

  test("no policy: everything goes", async () => {
    await ok("http://127.0.0.1/x", undefined);
    await ok("/ok", undefined);
  });

  test("https, ports, length, domains", async () => {
    await ok("https://hooks.example.com/x", policy());
    await refused("http://hooks.example.com/x", policy(), /must use https/);
    await ok("http://hooks.example.com/x", policy({ requireHttps: false }));
    await refused(
      "https://hooks.example.com:8443/x",
      policy({ allowedPorts: [443] }),
      /port 8443 not allowed/,
    );
    await ok("https://hooks.example.com/x", policy({ allowedPorts: [443] }));
    await refused(`https://hooks.example.com/${"x".repeat(30)}`, policy({ maxUrlLength: 30 }), /too long/);
    const domains = policy({ allowedDomains: ["*.example.com", "api.trusted.io"] });
    await ok("https://hooks.example.com/x", domains);
    await refused("https://example.com/x", domains, /domain not allowed: example\.com/);
    await refused("https://api.trusted.io.evil.com/x", domains, /domain not allowed/);
    await refused("https://nope.invalid/x", policy(), /Failed to resolve webhook host nope\.invalid/);
  });

  test("loopback, private and link-local addresses", async () => {
    const strict = policy({ disableLoopback: true, disablePrivateIps: true });
    await refused("/ok", strict, /Loopback webhooks are disabled/);
    await ok("/ok", policy());
    await refused("https://localhost/x", strict, /loopback/);
    await refused("https://127.0.0.1/x", strict, /loopback IP/);
    await refused("https://[::1]/x", strict, /loopback IP/);
    await refused("https://sneaky.example.com/x", strict, /loopback IP \(::ffff:127\.0\.0\.1/);
    await ok("https://127.0.0.1/x", policy());
    await refused("https://inside.example.com/x", strict, /private IP/);
    await refused("https://192.168.1.5/x", strict, /private IP/);
    await ok("https://inside.example.com/x", policy());
    // Cloud metadata endpoints are never a target under a policy.
    await refused("https://meta.example.com/x", policy(), /disallowed IP \(169\.254\.169\.254/);
    await refused("https://[fe80::1]/x", policy(), /disallowed IP/);
  });
});
