import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir, totalmem } from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { type Config, ConfigError, loadConfig } from "../../src/config/index.js";
import { defaultLimits, resolveLimits } from "../../src/config/limits.js";

const roots: string[] = [];
after(() => {
  for (const dir of roots) rmSync(dir, { recursive: true, force: true });
});

/** A project directory with the given files (strings are written as is, anything else as JSON). */
function project(files: Record<string, unknown>): string {
  const dir = mkdtempSync(path.join(tmpdir(), "hangar-config-"));
  roots.push(dir);
  for (const [name, content] of Object.entries(files)) {
    const file = path.join(dir, name);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, typeof content === "string" ? content : JSON.stringify(content));
  }
  return dir;
}

const GRAPH = "export const graph = {};\n";
const minimal = (extra: Record<string, unknown> = {}) => ({
  "langgraph.json": { graphs: { agent: "./agent.ts:graph" }, ...extra },
  "agent.ts": GRAPH,
});

function load(
  dir: string,
  opts: { flags?: Parameters<typeof loadConfig>[0]["flags"]; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Config {
  return loadConfig({ mode: "dev", flags: opts.flags ?? {}, env: opts.env ?? {}, cwd: opts.cwd ?? dir });
}

function rejects(fn: () => unknown, ...fragments: (string | RegExp)[]): ConfigError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof ConfigError, `expected a ConfigError, got ${String(caught)}`);
  for (const fragment of fragments) {
    if (typeof fragment === "string")
      assert.ok(caught.message.includes(fragment), `"${caught.message}" lacks "${fragment}"`);
    else assert.match(caught.message, fragment);
  }
  return caught;
}

describe("defaults", () => {
  test("a minimal langgraph.json gets every default", () => {
    const dir = project(minimal());
    const config = load(dir);
    assert.deepEqual(config, {
      mode: "dev",
      configPath: path.join(dir, "langgraph.json"),
      projectDir: dir,
      host: "127.0.0.1",
      port: 2024,
      dataDir: path.join(dir, ".hangar"),
      graphs: [{ id: "agent", file: path.join(dir, "agent.ts"), exportName: "graph" }],
      env: {},
      http: {
        configurable_headers: {
          includes: ["x-*", "user-agent"],
          excludes: ["x-api-key", "x-tenant-id", "x-service-key"],
        },
      },
      workers: 32,
      // One thread per core beyond the API's, at most 4.
      executorThreads: Math.min(4, availableParallelism() - 1),
      sqliteSynchronous: "normal",
      streamRetentionSeconds: 300,
      // The protocol's event buffer keeps the newest 10,000 events (16 MiB) of each thread.
      threadEventsMax: 10_000,
      threadEventsMaxBytes: 16 * 1024 * 1024,
      logLevel: "info",
      defaultAssistantConfigs: {},
      // Threads expire only when given a TTL of their own; every process sweeps every 5 minutes.
      threadTtl: { sweepIntervalMinutes: 5, sweepLimit: 1000 },
      apiKeys: {},
      allowUnauthenticated: false,
      warnings: [],
      redisPrefix: "hangar:",
      leaseSeconds: 30,
      maxBodyBytes: 32 * 1024 * 1024,
      maxUploadBytes: 512 * 1024 * 1024,
      limits: defaultLimits(),
      executeOutputBudgetBytes: 256 * 1024 * 1024,
      // The engine is the best one on PATH, chosen when the server starts; images under the data dir.
      sandboxes: { pidsMax: 1024, storageQuotaBytes: 500 * 1024 ** 3 },
      schemaResolveTimeoutMs: 30_000,
      fileIdleTimeoutSeconds: 300,
    });
  });

  test("tenant limits: defaults from the machine, HANGAR_* settings, bad values named", () => {
    const d = defaultLimits();
    assert.equal(d.sandboxes.cpuMillis, availableParallelism() * 1000);
    assert.equal(d.sandboxes.memoryBytes, totalmem());
    assert.deepEqual(d.crons, { minIntervalSeconds: 60, perOrg: 100 });
    const set = resolveLimits({
      HANGAR_CRON_MIN_INTERVAL_SECONDS: "1",
      HANGAR_CRONS_PER_ORG: "5",
      HANGAR_SANDBOX_MAX_CPU: "500m",
      HANGAR_SANDBOX_MAX_MEMORY: "1Gi",
      HANGAR_SANDBOXES_PER_ORG: "0",
    });
    assert.deepEqual(set.crons, { minIntervalSeconds: 1, perOrg: 5 });
    assert.equal(set.sandboxes.cpuMillis, 500);
    assert.equal(set.sandboxes.memoryBytes, 1024 ** 3);
    assert.equal(set.sandboxes.perOrg, 0);
    assert.throws(
      () => resolveLimits({ HANGAR_CRONS_PER_ORG: "-1" }),
      /HANGAR_CRONS_PER_ORG: must be an integer/,
    );
    assert.throws(
      () => resolveLimits({ HANGAR_SANDBOX_ORG_MEMORY: "lots" }),
      /HANGAR_SANDBOX_ORG_MEMORY=lots/,
    );
  });

  test("HANGAR_API_KEYS maps keys to organizations; a malformed entry is refused without echoing the key", () => {
    const dir = project(minimal());
    assert.deepEqual(load(dir, { env: { HANGAR_API_KEYS: "k1:org-a, k2:org-b," } }).apiKeys, {
      k1: "org-a",
      k2: "org-b",
    });
    const err = rejects(
      () => load(dir, { env: { HANGAR_API_KEYS: "supersecretkey" } }),
      "HANGAR_API_KEYS",
      "key:organization",
    );
    assert.ok(!err.message.includes("supersecretkey"), "the key itself must not be printed");
    assert.equal(load(dir, { env: { HANGAR_ALLOW_UNAUTHENTICATED: "1" } }).allowUnauthenticated, true);
    assert.equal(load(dir, { flags: { allowUnauthenticated: true } }).allowUnauthenticated, true);
  });

  test("the result is deeply frozen", () => {
    const dir = project(minimal({ http: { cors: { allow_origins: ["*"] } } }));
    const config = load(dir);
    assert.ok(Object.isFrozen(config));
    assert.ok(Object.isFrozen(config.graphs));
    assert.ok(Object.isFrozen(config.graphs[0]));
    assert.ok(Object.isFrozen(config.http.cors?.allow_origins));
    assert.throws(() => {
      (config as { port: number }).port = 1;
    }, TypeError);
  });

  test("mode is passed through", () => {
    const dir = project(minimal());
    assert.equal(loadConfig({ mode: "serve", flags: {}, env: {}, cwd: dir }).mode, "serve");
  });
});

describe("precedence: flag > HANGAR_* env > langgraph.json hangar section > default", () => {
  const file = { host: "10.0.0.1", port: 3001, data_dir: "./from-file", workers: 3 };
  const env = {
    HANGAR_HOST: "10.0.0.2",
    HANGAR_PORT: "3002",
    HANGAR_DATA_DIR: "from-env",
    HANGAR_WORKERS: "4",
    HANGAR_SQLITE_SYNCHRONOUS: "full",
    HANGAR_LOG_LEVEL: "warn",
  };
  const flags = {
    host: "10.0.0.3",
    port: 3003,
    dataDir: "from-flag",
    workers: 5,
    sqliteSynchronous: "normal",
    logLevel: "debug",
  };

  test("the file beats the defaults (paths relative to the file)", () => {
    const dir = project(minimal({ hangar: file }));
    const config = load(dir, { flags: { config: dir }, cwd: tmpdir() });
    assert.equal(config.host, "10.0.0.1");
    assert.equal(config.port, 3001);
    assert.equal(config.dataDir, path.join(dir, "from-file"));
    assert.equal(config.workers, 3);
  });

  test("env beats the file (paths relative to the working directory)", () => {
    const dir = project(minimal({ hangar: file }));
    const cwd = project({});
    const config = load(dir, { env: { ...env, HANGAR_CONFIG: dir }, cwd });
    assert.equal(config.host, "10.0.0.2");
    assert.equal(config.port, 3002);
    assert.equal(config.dataDir, path.join(cwd, "from-env"));
    assert.equal(config.workers, 4);
    assert.equal(config.sqliteSynchronous, "full");
    assert.equal(config.logLevel, "warn");
  });

  test("flags beat env", () => {
    const dir = project(minimal({ hangar: file }));
    const cwd = project({});
    const config = load(dir, { flags: { ...flags, config: dir }, env, cwd });
    assert.equal(config.host, "10.0.0.3");
    assert.equal(config.port, 3003);
    assert.equal(config.dataDir, path.join(cwd, "from-flag"));
    assert.equal(config.workers, 5);
    assert.equal(config.sqliteSynchronous, "normal");
    assert.equal(config.logLevel, "debug");
  });

  test("flags given as the strings the user typed are parsed", () => {
    const dir = project(minimal());
    const config = load(dir, { flags: { port: "0", workers: "7" } });
    assert.equal(config.port, 0);
    assert.equal(config.workers, 7);
  });

  test("empty environment variables count as unset", () => {
    const dir = project(minimal({ hangar: { port: 3001 } }));
    assert.equal(load(dir, { env: { HANGAR_PORT: "", HANGAR_HOST: "" } }).port, 3001);
  });

  test("HANGAR_CONFIG locates the file; --config beats it", () => {
    const a = project(minimal({ hangar: { port: 1111 } }));
    const b = project(minimal({ hangar: { port: 2222 } }));
    assert.equal(load(a, { env: { HANGAR_CONFIG: path.join(b, "langgraph.json") } }).port, 2222);
    assert.equal(load(a, { flags: { config: a }, env: { HANGAR_CONFIG: b } }).port, 1111);
  });

  test("HANGAR_STREAM_RETENTION_SECONDS", () => {
    const dir = project(minimal());
    assert.equal(load(dir, { env: { HANGAR_STREAM_RETENTION_SECONDS: "60" } }).streamRetentionSeconds, 60);
    assert.equal(load(dir, { env: { HANGAR_STREAM_RETENTION_SECONDS: "0" } }).streamRetentionSeconds, 0);
  });

  test("HANGAR_MAX_BODY_MB sets the request body limit (MiB); 0 or a non-integer is refused", () => {
    const dir = project(minimal());
    assert.equal(load(dir, { env: { HANGAR_MAX_BODY_MB: "2" } }).maxBodyBytes, 2 * 1024 * 1024);
    assert.throws(
      () => load(dir, { env: { HANGAR_MAX_BODY_MB: "0" } }),
      /HANGAR_MAX_BODY_MB: must be an integer/,
    );
    assert.throws(() => load(dir, { env: { HANGAR_MAX_BODY_MB: "1.5" } }), /HANGAR_MAX_BODY_MB/);
  });

  test("--postgres-uri beats POSTGRES_URI; unset means SQLite; a URI of another scheme is refused", () => {
    const dir = project(minimal());
    assert.equal("postgresUri" in load(dir), false);
    const env = { POSTGRES_URI: "postgres://env@db/hangar" };
    assert.equal(load(dir, { env }).postgresUri, "postgres://env@db/hangar");
    assert.equal(
      load(dir, { env, flags: { postgresUri: "postgresql://flag@db/hangar" } }).postgresUri,
      "postgresql://flag@db/hangar",
    );
    rejects(() => load(dir, { env: { POSTGRES_URI: "mysql://secret@db" } }), "POSTGRES_URI", "postgres://");
  });

  test("enum values are case-insensitive", () => {
    const dir = project(minimal());
    const config = load(dir, { env: { HANGAR_SQLITE_SYNCHRONOUS: "FULL", HANGAR_LOG_LEVEL: "Debug" } });
    assert.equal(config.sqliteSynchronous, "full");
    assert.equal(config.logLevel, "debug");
  });
});

describe("--config", () => {
  test("may name the directory holding langgraph.json", () => {
    const dir = project(minimal());
    assert.equal(
      load(dir, { flags: { config: dir }, cwd: tmpdir() }).configPath,
      path.join(dir, "langgraph.json"),
    );
  });

  test("is relative to the working directory, and may name a file with another name", () => {
    const dir = project({ "conf/other.json": { graphs: { g: "../g.ts" } }, "g.ts": GRAPH });
    const config = load(dir, { flags: { config: "conf/other.json" } });
    assert.equal(config.configPath, path.join(dir, "conf/other.json"));
    assert.equal(config.projectDir, path.join(dir, "conf"));
    assert.equal(config.graphs[0].file, path.join(dir, "g.ts"));
    assert.equal(config.dataDir, path.join(dir, "conf/.hangar"));
  });

  test("defaults to ./langgraph.json", () => {
    const dir = project(minimal());
    assert.equal(load(dir).configPath, path.join(dir, "langgraph.json"));
  });
});

describe("graphs", () => {
  test("both forms, with and without an export name", () => {
    const dir = project({
      "langgraph.json": {
        graphs: {
          a: "./src/a.ts:graph",
          b: "./src/b.ts",
          c: { path: "./src/c.mts:makeGraph", description: "The C graph" },
          d: { path: "src/d.js" },
        },
      },
      "src/a.ts": GRAPH,
      "src/b.ts": GRAPH,
      "src/c.mts": GRAPH,
      "src/d.js": GRAPH,
    });
    assert.deepEqual(load(dir).graphs, [
      { id: "a", file: path.join(dir, "src/a.ts"), exportName: "graph" },
      { id: "b", file: path.join(dir, "src/b.ts"), exportName: "default" },
      { id: "c", file: path.join(dir, "src/c.mts"), exportName: "makeGraph", description: "The C graph" },
      { id: "d", file: path.join(dir, "src/d.js"), exportName: "default" },
    ]);
  });

  test("absolute paths are kept", () => {
    const other = project({ "abs.ts": GRAPH });
    const dir = project({ "langgraph.json": { graphs: { g: `${path.join(other, "abs.ts")}:g` } } });
    assert.deepEqual(load(dir).graphs[0], { id: "g", file: path.join(other, "abs.ts"), exportName: "g" });
  });
});

describe("env", () => {
  test("an object (numbers and booleans become strings)", () => {
    const dir = project(minimal({ env: { A: "1", B: 2, C: true } }));
    assert.deepEqual(load(dir).env, { A: "1", B: "2", C: "true" });
  });

  test("a path to a .env file, relative to the project", () => {
    const dir = project({
      ...minimal({ env: "./config/.env" }),
      "config/.env": 'A=1\n# comment\nB="two words"\n',
    });
    assert.deepEqual(load(dir).env, { A: "1", B: "two words" });
  });

  test("is not applied to process.env", () => {
    const dir = project(minimal({ env: { HANGAR_CONFIG_TEST_MARKER: "x" } }));
    load(dir);
    assert.equal(process.env.HANGAR_CONFIG_TEST_MARKER, undefined);
  });
});

describe("http", () => {
  test("known settings are kept; unknown ones are dropped with a warning", () => {
    const http = {
      cors: { allow_origins: ["https://a.example"], allow_credentials: true, max_age: 600 },
      disable_mcp: true,
      disable_a2a: false,
      app: "./app.ts:app",
      mount_prefix: "/api",
      configurable_headers: { includes: ["x-team-*"], excludes: ["x-team-secret"] },
      logging_headers: { excludes: ["authorization"] },
      no_such_setting: 1,
    };
    const dir = project({ ...minimal({ http }), "app.ts": "" });
    const config = load(dir);
    assert.deepEqual(config.http, {
      cors: { allow_origins: ["https://a.example"], allow_credentials: true, max_age: 600 },
      disable_mcp: true,
      disable_a2a: false,
      app: { file: path.join(dir, "app.ts"), exportName: "app", authenticated: true },
      mount_prefix: "/api",
      configurable_headers: {
        includes: ["x-team-*"],
        excludes: ["x-api-key", "x-tenant-id", "x-service-key", "x-team-secret"],
      },
    });
    assert.equal(config.warnings.length, 1);
    assert.match(config.warnings[0], /http\.no_such_setting: not supported/);
  });

  test("http.app: authentication before the app unless the project orders it after its middleware", () => {
    const app = (extra: object) =>
      load(project({ ...minimal({ http: { app: "./app.ts", ...extra } }), "app.ts": "" })).http.app;
    assert.equal(app({})?.authenticated, true);
    assert.equal(app({ middleware_order: "auth_first" })?.authenticated, true);
    assert.equal(app({ middleware_order: "middleware_first" })?.authenticated, false);
    assert.equal(app({ enable_custom_route_auth: false })?.authenticated, false);
    assert.equal(app({})?.exportName, "default");
    assert.throws(
      () => app({ middleware_order: "auth_first", enable_custom_route_auth: false }),
      /http\.middleware_order: "auth_first" authenticates every request/,
    );
    assert.throws(() => app({ middleware_order: "last" }), /http\.middleware_order: must be "auth_first"/);
    assert.throws(
      () => load(project(minimal({ http: { app: "./missing.ts:app" } }))),
      /http\.app: app file not found/,
    );
    for (const prefix of ["api", "/api/", "/"]) {
      assert.throws(
        () => load(project(minimal({ http: { mount_prefix: prefix } }))),
        /http\.mount_prefix: must start with "\/"/,
      );
    }
  });

  test("auth.path names the project's Auth export (relative to the file); studio auth on by default", () => {
    const dir = project({ ...minimal({ auth: { path: "./src/auth.ts:auth" } }), "src/auth.ts": "" });
    const config = load(dir);
    assert.deepEqual(config.auth, {
      file: path.join(dir, "src", "auth.ts"),
      exportName: "auth",
      disableStudioAuth: false,
    });
    assert.deepEqual(config.warnings, []);
    const off = { ...minimal({ auth: { path: "./a.ts", disable_studio_auth: true } }), "a.ts": "" };
    assert.deepEqual(load(project(off)).auth?.disableStudioAuth, true);
    assert.equal(load(project(off)).auth?.exportName, "default");
    assert.equal(load(project(minimal({ auth: {} }))).auth, undefined, "no path: no custom auth");
  });

  test("a bad auth section stops start-up with the field named", () => {
    rejects(
      () => load(project(minimal({ auth: { path: "./missing.ts:auth" } }))),
      "auth.path: auth file not found",
    );
    rejects(() => load(project(minimal({ auth: { path: 42 } }))), "auth.path");
    rejects(() => load(project(minimal({ auth: "./auth.ts" }))), "auth");
  });

  test("a store section is no longer reported as ignored", () => {
    const config = load(project(minimal({ store: { ttl: { default_ttl: 5 } } })));
    assert.deepEqual(config.warnings, []);
  });

  test("tool-only keys (dependencies, node_version…) are accepted silently", () => {
    const config = load(project(minimal({ node_version: "20", dependencies: ["."], dockerfile_lines: [] })));
    assert.deepEqual(config.warnings, []);
  });
});

describe("ui", () => {
  test("ui names each agent's components file (relative to the file); ui_config.shared is kept", () => {
    const dir = project({
      ...minimal({ ui: { agent: "./src/ui.tsx", "my-agent": "./other.tsx" }, ui_config: { shared: ["x"] } }),
      "src/ui.tsx": "",
      "other.tsx": "",
    });
    const config = load(dir);
    assert.deepEqual(config.ui, {
      agents: [
        { agent: "agent", file: path.join(dir, "src", "ui.tsx") },
        { agent: "my-agent", file: path.join(dir, "other.tsx") },
      ],
      shared: ["x"],
    });
    assert.deepEqual(config.warnings, [], "ui is no longer reported as ignored");
    const noShared = load(project({ ...minimal({ ui: { agent: "./ui.tsx" } }), "ui.tsx": "" }));
    assert.deepEqual(noShared.ui?.shared, []);
  });

  test("no ui (or an empty one): no bundles; ui_config alone is a warning", () => {
    assert.equal(load(project(minimal())).ui, undefined);
    assert.equal(load(project(minimal({ ui: {} }))).ui, undefined);
    const config = load(project(minimal({ ui_config: { shared: ["x"] } })));
    assert.match(config.warnings.join("\n"), /ui_config: no `ui` components/);
  });

  test("a bad ui or ui_config stops start-up with the field named", () => {
    rejects(
      () => load(project(minimal({ ui: { agent: "./missing.tsx" } }))),
      "ui.agent: UI components file not found",
    );
    rejects(
      () => load(project(minimal({ ui: { "a b": "./missing.tsx" } }))),
      'ui["a b"]: UI components file not found',
    );
    rejects(
      () => load(project({ ...minimal({ ui: { agent: "./src" } }), "src/x.ts": "" })),
      "ui.agent: not a file",
    );
    rejects(
      () => load(project(minimal({ ui: { agent: 3 } }))),
      "ui.agent: must be the path of a components file",
    );
    rejects(() => load(project(minimal({ ui: { agent: "" } }))), "ui.agent: must name a file");
    rejects(
      () => load(project(minimal({ ui: "./ui.tsx" }))),
      'ui: must be an object {"<agent>": "./src/agent/ui.tsx"}',
    );
    rejects(() => load(project(minimal({ ui: { "": "./ui.tsx" } }))), "an agent name must not be empty");
    rejects(() => load(project(minimal({ ui_config: [] }))), "ui_config: must be an object");
    rejects(
      () => load(project(minimal({ ui_config: { shared: "x" } }))),
      "ui_config.shared: must be an array",
    );
    rejects(
      () => load(project(minimal({ ui_config: { shared: [1] } }))),
      "ui_config.shared[0]: must be a module name",
    );
  });
});

describe("LANGGRAPH_CONFIG", () => {
  test("is read as a JSON object keyed by graph id", () => {
    const dir = project(minimal());
    const value = { agent: { configurable: { model_name: "openai" }, context: { model: "x" } } };
    assert.deepEqual(
      load(dir, { env: { LANGGRAPH_CONFIG: JSON.stringify(value) } }).defaultAssistantConfigs,
      value,
    );
  });

  test("may come from the file's env when the process env lacks it", () => {
    const dir = project(minimal({ env: { LANGGRAPH_CONFIG: '{"agent":{"configurable":{"a":1}}}' } }));
    assert.deepEqual(load(dir).defaultAssistantConfigs, { agent: { configurable: { a: 1 } } });
  });

  test("unknown graph ids are a warning", () => {
    const config = load(project(minimal()), { env: { LANGGRAPH_CONFIG: '{"nope":{}}' } });
    assert.match(config.warnings.join("\n"), /LANGGRAPH_CONFIG: "nope": no graph/);
  });

  test("errors", () => {
    const dir = project(minimal());
    rejects(() => load(dir, { env: { LANGGRAPH_CONFIG: "{" } }), "LANGGRAPH_CONFIG: not valid JSON");
    rejects(() => load(dir, { env: { LANGGRAPH_CONFIG: "[]" } }), "LANGGRAPH_CONFIG: must be a JSON object");
    rejects(
      () => load(dir, { env: { LANGGRAPH_CONFIG: '{"agent": 1}' } }),
      'LANGGRAPH_CONFIG: "agent": must be an object',
    );
  });
});

describe("features' settings (environment, or langgraph.json env under it)", () => {
  test("HANGAR_PUBLIC_URL, LANGGRAPH_API_URL, LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS", () => {
    const dir = project(minimal());
    const config = load(dir, {
      env: {
        HANGAR_PUBLIC_URL: "https://agents.example.com/base/",
        LANGGRAPH_API_URL: "http://api.internal:2024",
        LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS: "5000",
      },
    });
    assert.equal(config.publicUrl, "https://agents.example.com/base");
    assert.equal(config.apiUrl, "http://api.internal:2024");
    assert.equal(config.schemaResolveTimeoutMs, 5000);
    // Not a positive integer: the default, as before the setting was read through Config.
    assert.equal(
      load(dir, { env: { LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS: "0" } }).schemaResolveTimeoutMs,
      30_000,
    );
    rejects(() => load(dir, { env: { HANGAR_PUBLIC_URL: "agents.example.com" } }), "HANGAR_PUBLIC_URL");
  });

  test("the sandbox engine, image store, process limit and storage quota", () => {
    const dir = project(minimal());
    const config = load(dir, {
      env: {
        HANGAR_SANDBOX_ENGINE: "bwrap",
        HANGAR_SANDBOX_IMAGES: "images",
        HANGAR_SANDBOX_PIDS_MAX: "64",
        HANGAR_SANDBOX_STORAGE_QUOTA: "20Gi",
      },
      flags: { config: dir },
      cwd: path.join(dir, "sub"),
    });
    assert.deepEqual(config.sandboxes, {
      engine: "bwrap",
      imagesDir: path.join(dir, "sub", "images"),
      pidsMax: 64,
      storageQuotaBytes: 20 * 1024 ** 3,
    });
    rejects(() => load(dir, { env: { HANGAR_SANDBOX_ENGINE: "docker" } }), "HANGAR_SANDBOX_ENGINE", "runsc");
    rejects(() => load(dir, { env: { HANGAR_SANDBOX_PIDS_MAX: "4" } }), "HANGAR_SANDBOX_PIDS_MAX");
    rejects(
      () => load(dir, { env: { HANGAR_SANDBOX_STORAGE_QUOTA: "lots" } }),
      "HANGAR_SANDBOX_STORAGE_QUOTA=lots",
    );
  });

  test("langgraph.json env gives them too; the real environment wins", () => {
    const dir = project(
      minimal({ env: { HANGAR_PUBLIC_URL: "https://file.example", HANGAR_SANDBOX_PIDS_MAX: "100" } }),
    );
    const config = load(dir, { env: { HANGAR_SANDBOX_PIDS_MAX: "200" } });
    assert.equal(config.publicUrl, "https://file.example");
    assert.equal(config.sandboxes.pidsMax, 200);
  });
});

describe("ConfigError", () => {
  test("config file missing", () => {
    const dir = project({});
    rejects(() => load(dir), `Config file not found: ${path.join(dir, "langgraph.json")}`);
    rejects(
      () => load(dir, { flags: { config: "nope.json" } }),
      `Config file not found: ${path.join(dir, "nope.json")}`,
    );
    rejects(
      () => load(dir, { env: { HANGAR_CONFIG: "x/y" } }),
      `Config file not found: ${path.join(dir, "x/y")}`,
    );
  });

  test("a directory without langgraph.json", () => {
    const dir = project({ "sub/readme.md": "" });
    rejects(
      () => load(dir, { flags: { config: "sub" } }),
      `Config file not found: ${path.join(dir, "sub/langgraph.json")}`,
    );
  });

  test("not JSON", () => {
    const dir = project({ "langgraph.json": '{"graphs": {' });
    const err = rejects(() => load(dir), `${path.join(dir, "langgraph.json")}: not valid JSON: `);
    assert.match(err.message, /JSON/);
  });

  test("not an object", () => {
    const dir = project({ "langgraph.json": "[1]" });
    rejects(() => load(dir), `${path.join(dir, "langgraph.json")}: must contain a JSON object`);
  });

  test("graphs missing, empty, or of the wrong type", () => {
    const file = (dir: string) => path.join(dir, "langgraph.json");
    let dir = project({ "langgraph.json": {} });
    rejects(() => load(dir), `${file(dir)}: graphs: is required`);
    dir = project({ "langgraph.json": { graphs: {} } });
    rejects(() => load(dir), `${file(dir)}: graphs: must declare at least one graph`);
    dir = project({ "langgraph.json": { graphs: ["./a.ts"] } });
    rejects(() => load(dir), `${file(dir)}: graphs: must be an object`);
  });

  test("a graph entry of the wrong type", () => {
    let dir = project({ "langgraph.json": { graphs: { agent: 3 } } });
    rejects(() => load(dir), `${path.join(dir, "langgraph.json")}: graphs.agent: must be a string like`);
    dir = project({ "langgraph.json": { graphs: { agent: { path: 3 } } } });
    rejects(() => load(dir), `${path.join(dir, "langgraph.json")}: graphs.agent.path: must be a string`);
    dir = project({
      "langgraph.json": { graphs: { agent: { path: "./a.ts", description: 1 } } },
      "a.ts": GRAPH,
    });
    rejects(() => load(dir), "graphs.agent.description: must be a string");
  });

  test("a graph file that does not exist", () => {
    const dir = project({ "langgraph.json": { graphs: { agent: "./src/missing.ts:graph" } } });
    rejects(
      () => load(dir),
      `${path.join(dir, "langgraph.json")}: graphs.agent: graph file not found: ${path.join(dir, "src/missing.ts")}`,
    );
    const dir2 = project({ "langgraph.json": { graphs: { "my.graph": { path: "./nope.ts" } } } });
    rejects(() => load(dir2), 'graphs["my.graph"].path: graph file not found');
  });

  test("a graph path that is a directory or empty", () => {
    const dir = project({ "langgraph.json": { graphs: { agent: "./src:graph" } }, "src/x.ts": GRAPH });
    rejects(() => load(dir), "graphs.agent: not a file:");
    const dir2 = project({ "langgraph.json": { graphs: { agent: ":graph" } } });
    rejects(() => load(dir2), "graphs.agent: must name a file");
  });

  test("env of a wrong type", () => {
    let dir = project(minimal({ env: ["A=1"] }));
    rejects(
      () => load(dir),
      `${path.join(dir, "langgraph.json")}: env: must be an object of variables or the path`,
    );
    dir = project(minimal({ env: 5 }));
    rejects(() => load(dir), "env: must be an object of variables or the path");
    dir = project(minimal({ env: { A: { nested: 1 } } }));
    rejects(() => load(dir), "env.A: must be a string, number or boolean");
  });

  test("an env file that does not exist", () => {
    const dir = project(minimal({ env: ".env.local" }));
    rejects(
      () => load(dir),
      `${path.join(dir, "langgraph.json")}: env: env file not found: ${path.join(dir, ".env.local")}`,
    );
  });

  test("a port that is not an integer 0–65535", () => {
    const dir = project(minimal());
    rejects(
      () => load(dir, { flags: { port: 65536 } }),
      "--port: must be an integer from 0 to 65535, got 65536",
    );
    rejects(
      () => load(dir, { flags: { port: "abc" } }),
      '--port: must be an integer from 0 to 65535, got "abc"',
    );
    rejects(() => load(dir, { flags: { port: 1.5 } }), "--port: must be an integer");
    rejects(
      () => load(dir, { env: { HANGAR_PORT: "-1" } }),
      'HANGAR_PORT: must be an integer from 0 to 65535, got "-1"',
    );
    rejects(() => load(dir, { env: { HANGAR_PORT: "80x" } }), "HANGAR_PORT: must be an integer");
    const fileDir = project(minimal({ hangar: { port: 70000 } }));
    rejects(
      () => load(fileDir),
      `${path.join(fileDir, "langgraph.json")}: hangar.port: must be an integer from 0 to 65535`,
    );
    const typeDir = project(minimal({ hangar: { port: "2024" } }));
    rejects(() => load(typeDir), "hangar.port: must be a number");
  });

  test("executor threads: flag > env > file, bounded by workers, none with Redis", () => {
    const dir = project(minimal({ hangar: { executor_threads: 3 } }));
    assert.equal(load(dir).executorThreads, 3);
    assert.equal(load(dir, { env: { HANGAR_EXECUTOR_THREADS: "2" } }).executorThreads, 2);
    assert.equal(
      load(dir, { flags: { executorThreads: "0" }, env: { HANGAR_EXECUTOR_THREADS: "2" } }).executorThreads,
      0,
    );
    // More threads than runs at once would idle.
    assert.equal(load(dir, { flags: { workers: "2" } }).executorThreads, 2);
    rejects(
      () => load(dir, { flags: { executorThreads: "-1" } }),
      '--executor-threads: must be an integer from 0 to 64, got "-1"',
    );
    rejects(
      () => load(project(minimal({ hangar: { executor_threads: "2" } }))),
      "hangar.executor_threads: must be a number",
    );
    const scaled = { POSTGRES_URI: "postgres://db/hangar", REDIS_URI: "redis://cache" };
    assert.equal(load(project(minimal()), { env: scaled }).executorThreads, 0);
    rejects(
      () => load(project(minimal()), { flags: { executorThreads: "2" }, env: scaled }),
      "--executor-threads: executor threads serve one process without Redis",
    );
  });

  test("workers < 1", () => {
    const dir = project(minimal());
    rejects(() => load(dir, { flags: { workers: 0 } }), "--workers: must be an integer ≥ 1, got 0");
    rejects(
      () => load(dir, { env: { HANGAR_WORKERS: "many" } }),
      'HANGAR_WORKERS: must be an integer ≥ 1, got "many"',
    );
    const fileDir = project(minimal({ hangar: { workers: -2 } }));
    rejects(() => load(fileDir), "hangar.workers: must be an integer ≥ 1, got -2");
  });

  test("unknown enum values", () => {
    const dir = project(minimal());
    rejects(
      () => load(dir, { flags: { sqliteSynchronous: "off" } }),
      '--sqlite-synchronous: must be one of normal, full, got "off"',
    );
    rejects(
      () => load(dir, { env: { HANGAR_LOG_LEVEL: "loud" } }),
      "HANGAR_LOG_LEVEL: must be one of debug, info, warn, error",
    );
  });

  test("a negative stream retention", () => {
    const dir = project(minimal());
    rejects(
      () => load(dir, { env: { HANGAR_STREAM_RETENTION_SECONDS: "-5" } }),
      "HANGAR_STREAM_RETENTION_SECONDS: must be",
    );
  });

  test("unknown keys in the hangar section and wrong http types", () => {
    let dir = project(minimal({ hangar: { prot: 1 } }));
    rejects(() => load(dir), `${path.join(dir, "langgraph.json")}: hangar.prot: unknown setting`);
    dir = project(minimal({ http: { cors: { allow_origins: "*" } } }));
    rejects(() => load(dir), "http.cors.allow_origins: must be an array of strings");
    dir = project(minimal({ http: { disable_mcp: "yes" } }));
    rejects(() => load(dir), "http.disable_mcp: must be true or false");
  });

  test("several problems are all reported, one per line", () => {
    const dir = project(minimal({ http: { disable_mcp: 1, disable_a2a: 2 } }));
    const err = rejects(() => load(dir), "http.disable_mcp", "http.disable_a2a");
    assert.equal(err.message.split("\n").length, 2);
  });
});
