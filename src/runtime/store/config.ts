/**
 * The `store` section of langgraph.json, which the config module does not carry:
 *
 *   "store": {
 *     "index": { "dims": 8, "embed": "./embed.ts:embed", "fields": ["text"] },
 *     "ttl": { "default_ttl": 60, "refresh_on_read": true, "sweep_interval_minutes": 5 }
 *   }
 *
 * `embed` names a module export (resolved from langgraph.json's directory, loaded like a graph file):
 * a function `(texts: string[]) => number[][] | Promise<number[][]>`, or a LangChain `Embeddings`
 * object (`embedDocuments` + `embedQuery`), or a promise of either. Provider strings of the official
 * server (`openai:text-embedding-3-small`) are refused with a message: Hangar makes no network calls
 * of its own for embeddings.
 */
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { z } from "zod";
import type { Config } from "../../config/index.js";
import { ConfigError } from "../../config/index.js";
import { DEFAULT_STORE_SETTINGS, type Embedder, type StoreSettings } from "./store.js";

const positive = (what: string) =>
  z.number({ error: `must be a number of ${what}` }).positive({ error: `must be more than 0 ${what}` });

const StoreSectionSchema = z.looseObject(
  {
    index: z
      .looseObject(
        {
          dims: z
            .number({ error: "must be a whole number" })
            .int({ error: "must be a whole number" })
            .positive({ error: "must be more than 0" }),
          embed: z
            .string({ error: 'must be a string like "./embed.ts:embed"' })
            .min(1, { error: "must not be empty" }),
          fields: z
            .array(z.string({ error: "must be a string" }), { error: "must be an array of field paths" })
            .min(1, { error: "must name at least one field (or omit it to embed whole values)" })
            .optional(),
        },
        { error: "must be an object {dims, embed, fields?}" },
      )
      .optional(),
    ttl: z
      .looseObject(
        {
          default_ttl: positive("minutes").nullable().optional(),
          refresh_on_read: z.boolean({ error: "must be true or false" }).optional(),
          sweep_interval_minutes: positive("minutes").nullable().optional(),
        },
        { error: "must be an object" },
      )
      .optional(),
  },
  { error: "must be an object" },
);

export type StoreSection = z.infer<typeof StoreSectionSchema>;

/** Reads and validates the raw `store` key of langgraph.json (absent → `{}`). */
export function readStoreSection(configPath: string): StoreSection {
  let raw: unknown;
  try {
    raw = (JSON.parse(readFileSync(configPath, "utf8")) as Record<string, unknown>)?.store;
  } catch (err) {
    throw new ConfigError(`${configPath}: cannot read the store section: ${(err as Error).message}`);
  }
  if (raw === undefined || raw === null) return {};
  const parsed = StoreSectionSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues
        .map((i) => `${configPath}: store${i.path.map((p) => `.${String(p)}`).join("")}: ${i.message}`)
        .join("\n"),
    );
  }
  return parsed.data;
}

/** `./file.ts:export` (the export defaults to `default`). */
const FILE_REF = /^(.*?)(?::([A-Za-z_$][\w$]*))?$/;

async function loadEmbedder(
  configPath: string,
  projectDir: string,
  index: NonNullable<StoreSection["index"]>,
) {
  const where = `${configPath}: store.index.embed`;
  const [, filePart = "", exportName = "default"] = FILE_REF.exec(index.embed.trim()) ?? [];
  const file = path.resolve(projectDir, filePart);
  if (!statSync(file, { throwIfNoEntry: false })?.isFile()) {
    const looksLikeProvider = !/[./\\]/.test(filePart);
    throw new ConfigError(
      looksLikeProvider
        ? `${where}: "${index.embed}" names an embedding provider; Hangar loads embedding functions from a file of the project instead, like "./embed.ts:embed"`
        : `${where}: file not found: ${file}`,
    );
  }
  let exported: any;
  try {
    const module = await import(pathToFileURL(file).href);
    if (!(exportName in module)) throw new Error(`the file has no export named "${exportName}"`);
    exported = await module[exportName];
  } catch (err) {
    throw new ConfigError(`${where}: failed to load ${file}: ${(err as Error).message}`);
  }
  const base = { dims: index.dims, fields: index.fields ?? ["$"] };
  if (typeof exported === "function") {
    const fn = exported as (texts: string[]) => number[][] | Promise<number[][]>;
    return {
      ...base,
      embedDocuments: async (texts: string[]) => fn(texts),
      embedQuery: async (text: string) => (await fn([text]))?.[0] as number[],
    } satisfies Embedder;
  }
  if (
    exported &&
    typeof exported.embedDocuments === "function" &&
    typeof exported.embedQuery === "function"
  ) {
    return {
      ...base,
      embedDocuments: (texts: string[]) => exported.embedDocuments(texts),
      embedQuery: (text: string) => exported.embedQuery(text),
    } satisfies Embedder;
  }
  throw new ConfigError(
    `${where}: the export "${exportName}" of ${file} is neither a function (texts: string[]) => number[][] nor an Embeddings object`,
  );
}

/** Store settings from langgraph.json: embedding function loaded, TTL defaults applied. */
export async function loadStoreSettings(
  config: Pick<Config, "configPath" | "projectDir">,
): Promise<{ settings: StoreSettings; sweepIntervalMs: number | undefined }> {
  const section = readStoreSection(config.configPath);
  return {
    settings: {
      index: section.index ? await loadEmbedder(config.configPath, config.projectDir, section.index) : null,
      defaultTtlMinutes: section.ttl?.default_ttl ?? DEFAULT_STORE_SETTINGS.defaultTtlMinutes,
      refreshOnRead: section.ttl?.refresh_on_read ?? DEFAULT_STORE_SETTINGS.refreshOnRead,
    },
    sweepIntervalMs: section.ttl?.sweep_interval_minutes
      ? section.ttl.sweep_interval_minutes * 60_000
      : undefined,
  };
}
