/**
 * Request schemas of the sandbox area (`/v2/sandboxes`). A mismatch is a 422
 * `{detail: [{loc: ["body", "size"], msg, type}]}` (see `routes.ts`: every `loc` entry is a string).
 * Unknown fields are ignored (the 0.5.x client sends `wait_for_ready` and `timeout`; later servers
 * know `proxy_config`, …), but fields that are fixed at creation are refused in a PATCH body, so a
 * client never believes it changed what cannot change.
 */
import { z } from "zod";
import { queryText } from "../agents/schemas.js";
import { nameProblem } from "./names.js";
import { QuantityError, toBytes, toMillicores } from "./quantity.js";

/** A required string; says "Field required" when absent, like FastAPI. */
const str = () =>
  z.string({
    error: (iss) => (iss.input === undefined ? "Field required" : "Input should be a valid string"),
  });

/** A volume or template name: a DNS-1035 label of at most 63 characters. */
export const Name = str().superRefine((name, ctx) => {
  const problem = nameProblem(name);
  if (problem) ctx.addIssue({ code: "custom", message: `Invalid name: ${problem}` });
});

/** A Kubernetes quantity > 0, kept as written and converted to whole base units (rounded up). */
function quantity(convert: (text: string) => number) {
  return str().transform((text, ctx) => {
    try {
      return { text, value: convert(text) };
    } catch (err) {
      if (!(err instanceof QuantityError)) throw err;
      ctx.addIssue({ code: "custom", message: `Invalid quantity: ${err.message}` });
      return z.NEVER;
    }
  });
}

/** Sizes and memory: bytes. */
export const Bytes = quantity(toBytes);
/** CPU: millicores. */
export const Millicores = quantity(toMillicores);

/** A field that exists on the resource but cannot be changed after creation: refused when sent. */
const fixed = (what: string) =>
  z
    .unknown()
    .superRefine((value, ctx) => {
      if (value !== undefined && value !== null) {
        ctx.addIssue({ code: "custom", message: `${what} is fixed at creation and cannot be changed` });
      }
    })
    .optional();

// ---- volumes ---------------------------------------------------------------------------------

export const VolumeCreate = z.object({
  name: Name,
  size: Bytes,
  storage_class: z.string().min(1).nullish(),
  // Sent by the official client. Local volumes are ready at once, so the values only need to be sane.
  wait_for_ready: z.boolean().nullish(),
  timeout: z.number().int().min(5).max(300).nullish(),
});

export const VolumePatch = z.object({
  name: Name.nullish(),
  size: Bytes.nullish(),
  storage_class: fixed("storage_class"),
});

// ---- templates -------------------------------------------------------------------------------

const MountPath = str().superRefine((p, ctx) => {
  if (!p.startsWith("/")) ctx.addIssue({ code: "custom", message: "mount_path must be an absolute path" });
  else if (p.length > 4096) ctx.addIssue({ code: "custom", message: "mount_path is too long" });
  else if (p.includes("\0")) ctx.addIssue({ code: "custom", message: "mount_path must not contain NUL" });
});

const VolumeMountSpec = z.object({ volume_name: str().min(1, "Field required"), mount_path: MountPath });

export const TemplateCreate = z.object({
  name: Name,
  image: str().min(1, "image must not be empty").regex(/^\S+$/, "image must not contain whitespace"),
  resources: z.object(
    { cpu: Millicores, memory: Bytes, storage: Bytes.nullish() },
    { error: (iss) => (iss.input === undefined ? "Field required" : "Input should be an object") },
  ),
  volume_mounts: z
    .array(VolumeMountSpec)
    .nullish()
    .superRefine((mounts, ctx) => {
      const seen = new Set<string>();
      mounts?.forEach((m, i) => {
        if (seen.has(m.mount_path)) {
          ctx.addIssue({
            code: "custom",
            path: [i, "mount_path"],
            message: `mount_path '${m.mount_path}' is used by more than one volume mount`,
          });
        }
        seen.add(m.mount_path);
      });
    }),
});

export const TemplatePatch = z.object({
  name: Name,
  image: fixed("image"),
  resources: fixed("resources"),
  volume_mounts: fixed("volume_mounts"),
});

// ---- lists and paths -------------------------------------------------------------------------

export const ListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  offset: z.coerce.number().int().min(0).default(0),
  name_contains: queryText().optional(),
});

/** Path names are not validated: a name that cannot exist is simply not found (404). */
export const NamePath = z.object({ name: queryText() });

// ---- sandboxes (boxes) and pools -------------------------------------------------------------

/** 0 disables; the official client itself only sends multiples of 60. */
const TtlSeconds = z
  .number()
  .int()
  .min(0)
  .max(30 * 24 * 3600);

export const BoxCreate = z.object({
  template_name: str().min(1, "Field required"),
  name: Name.nullish(),
  wait_for_ready: z.boolean().nullish(),
  /** Seconds to wait for `ready` when `wait_for_ready` (default 30, like the client). */
  timeout: z.number().int().min(1).max(600).nullish(),
  ttl_seconds: TtlSeconds.nullish(),
  idle_ttl_seconds: TtlSeconds.nullish(),
});

export const BoxPatch = z.object({
  name: Name.nullish(),
  ttl_seconds: TtlSeconds.nullish(),
  idle_ttl_seconds: TtlSeconds.nullish(),
  template_name: fixed("template_name"),
});

export const PoolCreate = z.object({
  name: Name,
  template_name: str().min(1, "Field required"),
  replicas: z.number().int().min(1).max(100),
  wait_for_ready: z.boolean().nullish(),
  timeout: z.number().int().min(1).max(600).nullish(),
});

export const PoolPatch = z.object({
  name: Name.nullish(),
  /** 0 pauses the pool (its warm sandboxes are removed). */
  replicas: z.number().int().min(0).max(100).nullish(),
  template_name: fixed("template_name"),
});

// ---- data plane ------------------------------------------------------------------------------

export const SandboxIdPath = z.object({ id: queryText() });

/** Text a command carries (its line, shell, directory, environment): a NUL byte cannot reach a process. */
const text = () => str().refine((s) => !s.includes("\0"), "must not contain a NUL byte");
/**
 * Linux's limits on what a program is started with: each argument or `NAME=value` at most 128 KiB
 * (MAX_ARG_STRLEN, with its NUL), all of them together a quarter of the stack limit (2 MiB at the
 * usual 8 MiB); the environment is held below that, leaving room for the image's own.
 */
export const MAX_ENV_VARIABLE_BYTES = 128 * 1024 - 1;
export const MAX_ENV_BYTES = 1024 * 1024;
/** A path (cwd, shell): Linux's PATH_MAX. */
const MAX_PATH_BYTES = 4096;
const pathText = () =>
  text().refine((s) => Buffer.byteLength(s) < MAX_PATH_BYTES, `must be shorter than ${MAX_PATH_BYTES} bytes`);
/** Variables as a shell names them: commands get them through `export`. */
const Env = z
  .record(
    z
      .string()
      .regex(
        /^[A-Za-z_][A-Za-z0-9_]*$/,
        "environment names are letters, digits and _, not starting with a digit",
      ),
    text(),
  )
  .superRefine((env, ctx) => {
    let total = 0;
    for (const [name, value] of Object.entries(env)) {
      const size = Buffer.byteLength(name) + 1 + Buffer.byteLength(value);
      total += size + 1;
      if (size > MAX_ENV_VARIABLE_BYTES) {
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: `an environment variable (NAME=value) may hold at most ${MAX_ENV_VARIABLE_BYTES} bytes`,
        });
      }
    }
    if (total > MAX_ENV_BYTES) {
      ctx.addIssue({ code: "custom", message: `the environment may hold at most ${MAX_ENV_BYTES} bytes` });
    }
  });

export const ExecuteBody = z.object({
  command: text().min(1, "command must not be empty"),
  /** Seconds; the command is killed when it runs longer. */
  timeout: z
    .number()
    .positive()
    .max(24 * 3600)
    .default(60),
  shell: pathText().min(1).default("/bin/bash"),
  env: Env.nullish(),
  cwd: pathText().min(1).nullish(),
});

/** The first frame of `/execute/ws`: a new command, or a reconnect to a running one. */
export const WsExecute = z.object({
  type: z.literal("execute"),
  command: text().min(1, "command must not be empty"),
  timeout_seconds: z
    .number()
    .positive()
    .max(24 * 3600)
    .default(60),
  shell: pathText().min(1).default("/bin/bash"),
  env: Env.nullish(),
  cwd: pathText().min(1).nullish(),
  command_id: z.string().min(1).max(128).nullish(),
  idle_timeout_seconds: z.number().min(0).default(300),
  kill_on_disconnect: z.boolean().default(false),
  ttl_seconds: z.number().min(0).default(600),
  pty: z.boolean().nullish(),
});

export const WsReconnect = z.object({
  type: z.literal("reconnect"),
  command_id: z.string().min(1),
  stdout_offset: z.number().int().min(0).default(0),
  stderr_offset: z.number().int().min(0).default(0),
});

export const FilePathQuery = z.object({
  path: str().superRefine((p, ctx) => {
    if (!p.startsWith("/")) ctx.addIssue({ code: "custom", message: "path must be absolute" });
    if (p.includes("\0")) ctx.addIssue({ code: "custom", message: "path must not contain NUL" });
  }),
});
