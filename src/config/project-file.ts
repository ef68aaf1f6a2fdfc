/**
 * langgraph.json: read, parse, validate its shape with zod, and turn its `graphs` and `env` into
 * resolved values. Keys that other LangGraph tools read and that need nothing here (dependencies,
 * node_version, dockerfile_lines, image_distro, python_version…) are allowed and ignored silently; keys
 * that would change how requests are served but Hangar does not honour yet produce a warning rather
 * than being silently dropped. `checkpointer` and `webhooks` are validated here and resolved by
 * `sections.ts`; `store` by runtime/store/config.ts.
 */
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { parseEnv } from "node:util";
import { type core, z } from "zod";
import { ConfigError } from "./errors.js";

const stringList = z.array(z.string({ error: "must be a string" }), { error: "must be an array of strings" });
const flag = z.boolean({ error: "must be true or false" }).optional();

const compiles = (source: string) => {
  try {
    new RegExp(source);
    return true;
  } catch {
    return false;
  }
};

const CorsSchema = z.object(
  {
    allow_origins: stringList.optional(),
    allow_methods: stringList.optional(),
    allow_headers: stringList.optional(),
    allow_credentials: flag,
    allow_origin_regex: z
      .string({ error: "must be a string (a regular expression)" })
      .refine(compiles, { error: "must be a valid regular expression" })
      .optional(),
    expose_headers: stringList.optional(),
    max_age: z
      .number({ error: "must be a number of seconds" })
      .int({ error: "must be a whole number of seconds" })
      .min(0, { error: "must not be negative" })
      .optional(),
  },
  { error: "must be an object" },
);

const HeaderRulesSchema = z.object(
  { includes: stringList.optional().nullable(), excludes: stringList.optional().nullable() },
  { error: 'must be an object {"includes": [...], "excludes": [...]}' },
);

const HttpSchema = z.looseObject(
  {
    app: z.string({ error: 'must be a string like "./src/app.ts:app"' }).optional(),
    mount_prefix: z
      .string({ error: 'must be a string like "/my-api"' })
      .regex(/^\/[^?#]*[^/?#]$/, { error: 'must start with "/" and not end with "/", like "/my-api"' })
      .optional(),
    enable_custom_route_auth: flag,
    middleware_order: z
      .enum(["auth_first", "middleware_first"], { error: 'must be "auth_first" or "middleware_first"' })
      .optional()
      .nullable(),
    configurable_headers: HeaderRulesSchema.optional().nullable(),
    /** Headers kept out of logs: Hangar logs no request headers, so there is nothing to filter. */
    logging_headers: HeaderRulesSchema.optional().nullable(),
    cors: CorsSchema.optional(),
    disable_a2a: flag,
    disable_mcp: flag,
    disable_assistants: flag,
    disable_threads: flag,
    disable_runs: flag,
    disable_store: flag,
    disable_meta: flag,
    disable_ui: flag,
  },
  { error: "must be an object" },
);

/** Hangar's own section. Strict, because every key in it is ours: a typo should fail, not be ignored. */
const HangarSectionSchema = z.strictObject(
  {
    host: z.string({ error: "must be a string" }).min(1, { error: "must not be empty" }).optional(),
    port: z.number({ error: "must be a number" }).optional(),
    data_dir: z.string({ error: "must be a string" }).min(1, { error: "must not be empty" }).optional(),
    workers: z.number({ error: "must be a number" }).optional(),
    executor_threads: z.number({ error: "must be a number" }).optional(),
  },
  { error: "must be an object" },
);

const GraphEntrySchema = z.union(
  [
    z.string(),
    z.looseObject({
      path: z.string({ error: 'must be a string like "./src/graph.ts:graph"' }),
      description: z.string({ error: "must be a string" }).optional(),
    }),
  ],
  {
    error: 'must be a string like "./src/graph.ts:graph" or an object {"path": "...", "description": "..."}',
  },
);

const EnvSchema = z.union(
  [
    z.string(),
    z.record(
      z.string(),
      z.union([z.string(), z.number(), z.boolean()], { error: "must be a string, number or boolean" }),
    ),
  ],
  { error: "must be an object of variables or the path of a .env file" },
);

/** `auth`: the project's `Auth` instance (`@langchain/langgraph-sdk/auth`), as the LangGraph servers load it. */
const AuthSchema = z.looseObject(
  {
    path: z.string({ error: 'must be a string like "./src/auth.ts:auth"' }).optional(),
    disable_studio_auth: flag,
    /** What /openapi.json declares the handler checks (OpenAPI security schemes), as the LangGraph servers read it. */
    openapi: z
      .looseObject(
        { securitySchemes: z.record(z.string(), z.record(z.string(), z.unknown())).optional() },
        { error: 'must be an object {"securitySchemes": {...}}' },
      )
      .optional(),
  },
  { error: 'must be an object {"path": "./src/auth.ts:auth"}' },
);

/** `ui`: generative UI components per agent, bundled at start-up (`src/ui/`). */
const UiSchema = z.record(
  z.string(),
  z.string({ error: 'must be the path of a components file, like "./src/agent/ui.tsx"' }),
  { error: 'must be an object {"<agent>": "./src/agent/ui.tsx"}' },
);

/** `ui_config.shared`: modules the components share with the page that renders them (not bundled). */
const UiConfigSchema = z.looseObject(
  {
    shared: z
      .array(z.string({ error: "must be a module name" }), { error: "must be an array of module names" })
      .optional(),
  },
  { error: 'must be an object {"shared": ["<module>", ...]}' },
);

const minutes = z
  .number({ error: "must be a number of minutes" })
  .positive({ error: "must be more than 0 minutes" });
const wholeNumber = z
  .number({ error: "must be a whole number" })
  .int({ error: "must be a whole number" })
  .positive({ error: "must be more than 0" });

/** `checkpointer.ttl` (the official ThreadTTLConfig). Minutes may be fractional, as the official server reads them. */
const ThreadTtlSchema = z.looseObject(
  {
    strategy: z.enum(["delete", "keep_latest"], { error: 'must be "delete" or "keep_latest"' }).optional(),
    default_ttl: minutes.nullable().optional(),
    sweep_interval_minutes: minutes.nullable().optional(),
    sweep_limit: wholeNumber.nullable().optional(),
  },
  { error: "must be an object" },
);

/**
 * `checkpointer`. `serde` configures the Python server's deserialization (module allowlists, pickle),
 * which has no counterpart for LangGraph.js checkpoints: accepted as is.
 */
const CheckpointerSchema = z.looseObject(
  {
    ttl: ThreadTtlSchema.nullable().optional(),
    serde: z.looseObject({}, { error: "must be an object" }).nullable().optional(),
    backend: z.string({ error: "must be a string" }).optional(),
    path: z.string({ error: "must be a string" }).optional(),
  },
  { error: "must be an object" },
);

/** The payload fields `webhooks.allowed_fields` may keep (the official list). */
const WEBHOOK_PAYLOAD_FIELDS = [
  "run_id",
  "thread_id",
  "assistant_id",
  "created_at",
  "updated_at",
  "metadata",
  "kwargs",
  "multitask_strategy",
  "status",
  "run_started_at",
  "run_ended_at",
  "webhook_sent_at",
  "values",
  "error",
] as const;

/** `webhooks.url` (the official WebhookUrlPolicy). */
const WebhookUrlSchema = z.looseObject(
  {
    require_https: flag,
    allowed_domains: z
      .array(
        z
          .string({ error: "must be a string" })
          .min(1, { error: "must not be empty" })
          .refine((d) => !d.includes("*") || (d.startsWith("*.") && !d.slice(2).includes("*")), {
            error: 'a wildcard is only allowed as a prefix, like "*.example.com"',
          }),
        { error: "must be an array of host names" },
      )
      .optional(),
    allowed_ports: z
      .array(
        z
          .number({ error: "must be a port number" })
          .int({ error: "must be a port number" })
          .min(1, { error: "must be a port from 1 to 65535" })
          .max(65535, { error: "must be a port from 1 to 65535" }),
        { error: "must be an array of port numbers" },
      )
      .optional(),
    max_url_length: wholeNumber.optional(),
    disable_loopback: flag,
    disable_private_ips: flag,
  },
  { error: "must be an object" },
);

/** `webhooks` (the official WebhooksConfig). */
const WebhooksSchema = z.looseObject(
  {
    env_prefix: z.string({ error: "must be a string" }).optional(),
    url: WebhookUrlSchema.optional(),
    headers: z
      .record(z.string(), z.string({ error: "must be a string" }), { error: "must be an object of strings" })
      .optional(),
    allowed_fields: z
      .array(
        z.enum(WEBHOOK_PAYLOAD_FIELDS, { error: `must be one of ${WEBHOOK_PAYLOAD_FIELDS.join(", ")}` }),
        { error: "must be an array of payload field names" },
      )
      .nullable()
      .optional(),
  },
  { error: "must be an object" },
);

const ProjectFileSchema = z.looseObject(
  {
    graphs: z.record(z.string(), GraphEntrySchema, {
      error: (iss) =>
        iss.input === undefined ? "is required" : 'must be an object {"<graph id>": "./file.ts:export"}',
    }),
    env: EnvSchema.optional(),
    http: HttpSchema.optional(),
    hangar: HangarSectionSchema.optional(),
    auth: AuthSchema.optional(),
    ui: UiSchema.optional(),
    ui_config: UiConfigSchema.optional(),
    checkpointer: CheckpointerSchema.nullable().optional(),
    webhooks: WebhooksSchema.nullable().optional(),
  },
  { error: "must contain a JSON object" },
);

export type CheckpointerSection = z.infer<typeof CheckpointerSchema>;
export type WebhooksSection = z.infer<typeof WebhooksSchema>;

export type HangarSection = z.infer<typeof HangarSectionSchema>;
export type HttpSection = z.infer<typeof HttpSchema>;

export interface ProjectFile {
  graphs: z.infer<typeof ProjectFileSchema>["graphs"];
  env: z.infer<typeof EnvSchema> | undefined;
  /** The `http` keys Hangar knows (the others were dropped with a warning). */
  http: HttpSection;
  hangar: HangarSection;
  auth: z.infer<typeof AuthSchema> | undefined;
  ui: z.infer<typeof UiSchema> | undefined;
  ui_config: z.infer<typeof UiConfigSchema> | undefined;
  checkpointer: CheckpointerSection | undefined;
  webhooks: WebhooksSection | undefined;
  warnings: string[];
}

export function readProjectFile(configPath: string): ProjectFile {
  let text: string;
  try {
    text = readFileSync(configPath, "utf8");
  } catch (err) {
    throw new ConfigError(`Cannot read config file ${configPath}: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${configPath}: not valid JSON: ${(err as Error).message}`);
  }
  const parsed = ProjectFileSchema.safeParse(json);
  if (!parsed.success) {
    throw new ConfigError(formatIssues(configPath, parsed.error.issues));
  }
  const file = parsed.data;
  if (Object.keys(file.graphs).length === 0) {
    throw new ConfigError(`${configPath}: graphs: must declare at least one graph`);
  }
  const warnings: string[] = [];
  // Keys the schemas do not know are dropped, with a warning (the sections are loose for that).
  const unknownKeys = (
    at: string,
    value: object | null | undefined,
    schema: { shape: object },
    why: string,
  ) => {
    for (const key of Object.keys(value ?? {}))
      if (!(key in schema.shape)) warnings.push(`${configPath}: ${at}.${key}: ${why}`);
  };
  const http = file.http ?? {};
  unknownKeys("http", http, HttpSchema, "not supported by Hangar; ignored");
  const known = Object.fromEntries(
    Object.entries(http).filter(([k, v]) => k in HttpSchema.shape && v !== undefined),
  );
  const checkpointer = file.checkpointer ?? undefined;
  const webhooks = file.webhooks ?? undefined;
  unknownKeys("checkpointer", checkpointer, CheckpointerSchema, "unknown setting; ignored");
  unknownKeys("checkpointer.ttl", checkpointer?.ttl, ThreadTtlSchema, "unknown setting; ignored");
  unknownKeys("webhooks", webhooks, WebhooksSchema, "unknown setting; ignored");
  unknownKeys("webhooks.url", webhooks?.url, WebhookUrlSchema, "unknown setting; ignored");
  // Hangar keeps checkpoints in its own database: another backend would change where state lives.
  if (checkpointer?.path !== undefined || (checkpointer?.backend ?? "default") !== "default") {
    warnings.push(
      `${configPath}: checkpointer: custom checkpointer backends are not supported; checkpoints stay in Hangar's database`,
    );
  }
  return {
    graphs: file.graphs,
    env: file.env,
    http: known as HttpSection,
    hangar: file.hangar ?? {},
    auth: file.auth,
    ui: file.ui,
    ui_config: file.ui_config,
    checkpointer,
    webhooks,
    warnings,
  };
}

export interface ParsedGraph {
  id: string;
  file: string;
  exportName: string;
  description?: string;
}

/** `"./path/file.ts:exportName"`; the export defaults to `default`. A Windows drive colon is not an export. */
const GRAPH_REF = /^(.*?)(?::([A-Za-z_$][\w$]*))?$/;

export function resolveGraphs(
  configPath: string,
  projectDir: string,
  graphs: ProjectFile["graphs"],
): ParsedGraph[] {
  return Object.entries(graphs).map(([id, entry]) => {
    const field = `graphs${formatKey(id)}`;
    if (id.trim() === "") throw new ConfigError(`${configPath}: ${field}: a graph id must not be empty`);
    const ref = typeof entry === "string" ? entry : entry.path;
    const refField = typeof entry === "string" ? field : `${field}.path`;
    const { file, exportName } = resolveModuleRef(configPath, projectDir, ref, refField, "graph");
    const spec: ParsedGraph = { id, file, exportName };
    if (typeof entry !== "string" && entry.description !== undefined) spec.description = entry.description;
    return spec;
  });
}

/** A `"./path/file.ts:exportName"` reference to an existing file; the export defaults to `default`. */
export function resolveModuleRef(
  configPath: string,
  projectDir: string,
  ref: string,
  field: string,
  what: string,
): { file: string; exportName: string } {
  const [, filePart = "", exportName = "default"] = GRAPH_REF.exec(ref.trim()) ?? [];
  if (filePart === "") {
    throw new ConfigError(`${configPath}: ${field}: must name a file, like "./src/${what}.ts:${what}"`);
  }
  const file = path.resolve(projectDir, filePart);
  const stat = statSync(file, { throwIfNoEntry: false });
  if (!stat) throw new ConfigError(`${configPath}: ${field}: ${what} file not found: ${file}`);
  if (!stat.isFile()) throw new ConfigError(`${configPath}: ${field}: not a file: ${file}`);
  return { file, exportName };
}

/** `ui` entries → agent name and absolute path of an existing components file. */
export function resolveUi(
  configPath: string,
  projectDir: string,
  ui: Record<string, string>,
): { agent: string; file: string }[] {
  return Object.entries(ui).map(([agent, ref]) => {
    const field = `ui${formatKey(agent)}`;
    if (agent.trim() === "")
      throw new ConfigError(`${configPath}: ${field}: an agent name must not be empty`);
    if (ref.trim() === "") {
      throw new ConfigError(`${configPath}: ${field}: must name a file, like "./src/agent/ui.tsx"`);
    }
    const file = path.resolve(projectDir, ref.trim());
    const stat = statSync(file, { throwIfNoEntry: false });
    if (!stat) throw new ConfigError(`${configPath}: ${field}: UI components file not found: ${file}`);
    if (!stat.isFile()) throw new ConfigError(`${configPath}: ${field}: not a file: ${file}`);
    return { agent, file };
  });
}

export function resolveEnv(
  configPath: string,
  projectDir: string,
  env: ProjectFile["env"],
): Record<string, string> {
  if (env === undefined) return {};
  if (typeof env !== "string") {
    return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, String(v)]));
  }
  const envPath = path.resolve(projectDir, env);
  const stat = statSync(envPath, { throwIfNoEntry: false });
  if (!stat) throw new ConfigError(`${configPath}: env: env file not found: ${envPath}`);
  if (!stat.isFile()) throw new ConfigError(`${configPath}: env: not a file: ${envPath}`);
  try {
    return { ...parseEnv(readFileSync(envPath, "utf8")) } as Record<string, string>;
  } catch (err) {
    throw new ConfigError(`${configPath}: env: cannot read ${envPath}: ${(err as Error).message}`);
  }
}

/** One line per problem, each naming the file and the field: `<file>: http.cors.max_age: must …`. */
function formatIssues(configPath: string, issues: core.$ZodIssue[]): string {
  return flatten(issues, [])
    .map(({ at, message }) => `${configPath}: ${at.length ? `${formatPath(at)}: ` : ""}${message}`)
    .join("\n");
}

interface Problem {
  at: PropertyKey[];
  message: string;
}

/**
 * A union's own message is generic ("must be a string or an object"). When the input clearly aimed at
 * one branch (that branch got further into the value), report that branch's problems instead, so
 * `{"path": 3}` says `graphs.agent.path: must be a string`, not that the whole entry is wrong.
 */
function flatten(issues: core.$ZodIssue[], prefix: PropertyKey[]): Problem[] {
  return issues.flatMap((issue): Problem[] => {
    const at = [...prefix, ...issue.path];
    if (issue.code === "invalid_union" && issue.errors.length > 0) {
      const depth = (branch: core.$ZodIssue[]) => Math.max(0, ...branch.map((i) => i.path.length));
      const best = issue.errors.reduce((a, b) => (depth(b) > depth(a) ? b : a));
      if (depth(best) > 0) return flatten(best, at);
    }
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => ({ at: [...at, key], message: "unknown setting" }));
    }
    return [{ at, message: issue.message }];
  });
}

function formatPath(at: PropertyKey[]): string {
  return at.map((k, i) => (i === 0 && /^[A-Za-z_]\w*$/.test(String(k)) ? String(k) : formatKey(k))).join("");
}

function formatKey(key: PropertyKey): string {
  if (typeof key === "number") return `[${key}]`;
  const s = String(key);
  return /^[A-Za-z_]\w*$/.test(s) ? `.${s}` : `[${JSON.stringify(s)}]`;
}
