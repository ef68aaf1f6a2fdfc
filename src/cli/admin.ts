/**
 * Administration commands that work on the data dir directly (the server may be running: SQLite in
 * WAL mode takes writes from several processes):
 *
 *   hangar keys create --org <name>        prints a new API key once; only its hash is stored
 *   hangar keys list                       id, prefix, organization, created, revoked
 *   hangar keys revoke <id | prefix>
 *   hangar orgs set <name> --sandbox-storage-quota <quantity>
 *   hangar orgs list | show <name>
 *
 *   hangar migrate                         applies the database's pending migrations and exits
 *   hangar images import <name> <source>   imports a sandbox image (docker save / OCI archive, OCI layout)
 *   hangar images build <name> --packages <a,b> [--suite <release>] [--variant <set>] [--mirror <url>]
 *                                          builds one from Debian packages (mmdebstrap)
 *   hangar images list | rm <name>         (the image store is a directory: no database needed)
 *
 * Each takes --config / --data-dir (same resolution as `hangar dev`) to find the database, or
 * --postgres-uri / POSTGRES_URI for a Postgres deployment.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { ConfigError, loadConfig } from "../config/index.js";
import { generateApiKey, hashApiKey } from "../http/auth.js";
import { sandboxesByImage } from "../sandboxes/engines/host-driver.js";
import { ImageStore } from "../sandboxes/engines/images.js";
import { sandboxDirs } from "../sandboxes/engines/index.js";
import { formatGi, QuantityError, toBytes } from "../sandboxes/quantity.js";
import type { Storage } from "../storage/ports.js";

export const ADMIN_COMMANDS = {
  keys: "Manage API keys: create --org <name> | list | revoke <id|prefix>",
  orgs: "Manage organizations: set <name> --sandbox-storage-quota <size> | list | show <name>",
  migrate: "Apply pending database migrations and exit: [--postgres-uri <uri> | --data-dir <path>]",
  images:
    "Manage the sandbox image store: import <name> <docker save or OCI archive | OCI layout dir> | build <name> --packages <a,b> [--suite <release>] [--variant <set>] [--mirror <url>] | list | rm <name>",
} as const;
export type AdminCommand = keyof typeof ADMIN_COMMANDS;

const ORG_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

class UsageError extends Error {}

export async function runAdmin(command: AdminCommand, argv: string[]): Promise<void> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    return usage(command, (err as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`Usage: hangar ${command} ${ADMIN_COMMANDS[command].replace(/^[^:]*: /, "")}\n`);
    return;
  }
  let storage: Storage | undefined;
  try {
    if (command === "images") {
      process.stdout.write(`${await images(positionals, values)}\n`);
      return;
    }
    // Loaded only by the commands that open the database (`images` has none: it starts faster).
    const [{ openPostgres, openSqlite }, { openPostgresStorage, openSqliteStorage }, { MIGRATIONS }] =
      await Promise.all([
        import("../storage/sql/database.js"),
        import("../storage/sql/index.js"),
        import("../storage/sql/migrations.js"),
      ]);
    const postgresUri = values["postgres-uri"] || process.env.POSTGRES_URI || undefined;
    if (command === "migrate") {
      // Opening a database migrates it (once, across processes opening it at once).
      const database = postgresUri
        ? await openPostgres({ uri: postgresUri, max: 1 })
        : await openSqlite({ dataDir: dataDir(values), synchronous: "full" });
      await database.close();
      const { migrated } = database;
      process.stdout.write(
        `${migrated.length ? `Applied migrations ${migrated.join(", ")}` : "Nothing to migrate"}; schema at ${MIGRATIONS.at(-1)?.name}.\n`,
      );
      return;
    }
    storage = postgresUri
      ? await openPostgresStorage({ uri: postgresUri, max: 2 })
      : await openSqliteStorage({ dataDir: dataDir(values), synchronous: "full" });
    const out =
      command === "keys"
        ? await keys(storage, positionals, values)
        : await orgs(storage, positionals, values);
    process.stdout.write(`${out}\n`);
  } catch (err) {
    if (err instanceof UsageError) return usage(command, err.message);
    process.stderr.write(`hangar: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  } finally {
    await storage?.close();
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      config: { type: "string", short: "c" },
      "data-dir": { type: "string" },
      "postgres-uri": { type: "string" },
      org: { type: "string" },
      "sandbox-storage-quota": { type: "string" },
      json: { type: "boolean" },
      packages: { type: "string" },
      suite: { type: "string" },
      variant: { type: "string" },
      mirror: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
}
type Values = ReturnType<typeof parse>["values"];

function dataDir(values: Values): string {
  if (values["data-dir"]) return path.resolve(values["data-dir"]);
  if (process.env.HANGAR_DATA_DIR && !values.config) return path.resolve(process.env.HANGAR_DATA_DIR);
  return loadConfig({ mode: "serve", flags: { config: values.config }, env: process.env, cwd: process.cwd() })
    .dataDir;
}

/** The image store of the data dir's sandboxes (`HANGAR_SANDBOX_IMAGES` or `<data dir>/images`). */
async function images([action, ...rest]: string[], values: Values): Promise<string> {
  if (!["import", "build", "list", "rm"].includes(action ?? "")) {
    throw new UsageError(action ? `unknown images action "${action}"` : "missing images action");
  }
  const { stateDir, imagesDir } = sandboxDirs(
    dataDir(values),
    process.env.HANGAR_SANDBOX_IMAGES || undefined,
  );
  const store = new ImageStore(imagesDir, stateDir);
  if (action === "import") {
    const [name, source] = rest;
    if (!name || !source) throw new UsageError("images import needs <name> <archive or OCI layout dir>");
    const ref = await store.import(name, source);
    if (values.json) return JSON.stringify(ref);
    return `Imported ${ref.name} (${ref.digest})${ref.unpacked ? "" : ", content already in the store"}.`;
  }
  if (action === "build") {
    const [name] = rest;
    if (!name || values.packages === undefined) {
      throw new UsageError("images build needs <name> --packages <a,b,…> (an empty list: the variant alone)");
    }
    const ref = await store.build(name, {
      packages: values.packages.split(",").filter(Boolean),
      suite: values.suite ?? (await hostSuite()),
      variant: values.variant ?? "minbase",
      mirror: values.mirror,
    });
    if (values.json) return JSON.stringify(ref);
    return `Built ${ref.name} (${ref.digest}) from ${ref.source}.`;
  }
  if (action === "list") {
    const refs = await store.list();
    if (values.json) return JSON.stringify(refs);
    if (refs.length === 0) return `No imported images in ${imagesDir}.`;
    return table(
      ["NAME", "DIGEST", "IMPORTED"],
      refs.map((r) => [r.name, r.digest.slice(0, 19), r.imported_at]),
    );
  }
  if (!rest[0]) throw new UsageError("images rm needs the image's name");
  const { ref, keptFor } = await store.remove(rest[0], () => sandboxesByImage(stateDir));
  const kept = keptFor.length ? ` Its content stays while sandboxes use it: ${keptFor.join(", ")}.` : "";
  return `Removed ${ref.name}.${kept}`;
}

/** The host's Debian release (`VERSION_CODENAME`), the default suite of `images build`. */
async function hostSuite(): Promise<string> {
  const osRelease = await readFile("/etc/os-release", "utf8").catch(() => "");
  return /^VERSION_CODENAME=(\w+)$/m.exec(osRelease)?.[1] ?? "stable";
}

async function keys(storage: Storage, [action, ...rest]: string[], values: Values): Promise<string> {
  switch (action) {
    case "create": {
      const org = values.org;
      if (!org || !ORG_NAME.test(org))
        throw new UsageError("keys create needs --org <name> (letters, digits, . _ -)");
      const { key, prefix } = generateApiKey();
      const record = await storage.auth.createKey(org, hashApiKey(key), prefix);
      if (values.json) return JSON.stringify({ ...record, key });
      return `${key}\n\nAPI key ${record.id} for organization "${org}". Store it now: it is not shown again.`;
    }
    case "list": {
      const all = await storage.auth.listKeys();
      if (values.json) return JSON.stringify(all);
      if (all.length === 0) return "No API keys.";
      return table(
        ["ID", "PREFIX", "ORGANIZATION", "CREATED", "REVOKED"],
        all.map((k) => [k.id, k.prefix, k.org_id, k.created_at, k.revoked_at ?? "-"]),
      );
    }
    case "revoke": {
      const which = rest[0];
      if (!which) throw new UsageError("keys revoke needs the key's id or prefix");
      const revoked = await storage.auth.revokeKey(which);
      if (!revoked) throw new Error(`No API key has id or prefix "${which}"`);
      return `Revoked API key ${revoked.id} (${revoked.prefix}…) of organization "${revoked.org_id}".`;
    }
    default:
      throw new UsageError(action ? `unknown keys action "${action}"` : "missing keys action");
  }
}

async function orgs(storage: Storage, [action, name]: string[], values: Values): Promise<string> {
  switch (action) {
    case "set": {
      if (!name || !ORG_NAME.test(name)) throw new UsageError("orgs set needs an organization name");
      const quota = values["sandbox-storage-quota"];
      if (!quota) throw new UsageError("orgs set needs --sandbox-storage-quota <size>, e.g. 500Gi");
      let bytes: number;
      try {
        bytes = toBytes(quota);
      } catch (err) {
        if (err instanceof QuantityError) throw new ConfigError(`--sandbox-storage-quota: ${err.message}`);
        throw err;
      }
      await storage.sandboxes.setStorageQuota(name, bytes);
      return `Organization "${name}": sandbox storage quota ${formatGi(bytes)}.`;
    }
    case "list": {
      const all = await storage.auth.listOrgs();
      if (values.json) return JSON.stringify(all);
      if (all.length === 0) return "No organizations yet (they appear with their first key or setting).";
      return table(
        ["ORGANIZATION", "ACTIVE KEYS", "SANDBOX STORAGE QUOTA"],
        all.map((o) => [o.org_id, String(o.active_keys), quotaText(o.sandbox_storage_quota_bytes)]),
      );
    }
    case "show": {
      if (!name) throw new UsageError("orgs show needs an organization name");
      const usage = await storage.sandboxes.storageUsage(name);
      const org = (await storage.auth.listOrgs()).find((o) => o.org_id === name);
      const report = {
        org_id: name,
        active_keys: org?.active_keys ?? 0,
        sandbox_storage_quota: quotaText(org?.sandbox_storage_quota_bytes ?? null),
        sandbox_storage_used: formatGi(usage.usage_bytes),
      };
      if (values.json) return JSON.stringify(report);
      return Object.entries(report)
        .map(([k, v]) => `${k.padEnd(24)}${v}`)
        .join("\n");
    }
    default:
      throw new UsageError(action ? `unknown orgs action "${action}"` : "missing orgs action");
  }
}

const quotaText = (bytes: number | null) => (bytes === null ? "(server default)" : formatGi(bytes));

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  return [header, ...rows]
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

function usage(command: AdminCommand, message: string): void {
  process.stderr.write(
    `hangar: ${message}\n\nUsage: hangar ${command} ${ADMIN_COMMANDS[command].replace(/^[^:]*: /, "")}\n`,
  );
  process.exitCode = 2;
}
