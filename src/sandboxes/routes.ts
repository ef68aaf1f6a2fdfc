/**
 * The sandbox control plane's HTTP API, mounted at `/v2/sandboxes` (the "gen-1" API that the
 * `langsmith` 0.5.x `SandboxClient` speaks): volumes and templates, addressed by name, plus the
 * sandbox and pool routes (box-routes.ts) and each sandbox's data plane (dataplane.ts).
 *
 * Statuses: 201 create, 200 get/list/patch, 204 delete; 400 ResizeError / VolumeNotFound, 404
 * NotFound, 409 Conflict, 422 validation, 429 storage quota. See docs/sandboxes.md.
 */
import { type Context, Hono } from "hono";
import type { z } from "zod";
import type { AuthAction, CustomAuth } from "../auth/custom.js";
import type { Config } from "../config/index.js";
import { HangarError, validationFailed } from "../errors.js";
import { type AppEnv, orgOf } from "../http/context.js";
import { body, params, query } from "../http/validation.js";
import { matchesFilter } from "../storage/filter.js";
import type { SandboxPage, Storage, TemplateRecord, VolumeRecord } from "../storage/ports.js";
import { SandboxAuthz } from "./authz.js";
import { boxRoutes } from "./box-routes.js";
import { type BoxService, boxIdNotFound } from "./boxes.js";
import { dataplaneRoutes } from "./dataplane.js";
import * as S from "./schemas.js";
import {
  mountedVolumesNotFound,
  type Readable,
  templateNotFound,
  type VolumeTemplateService,
  volumeNotFound,
} from "./volumes-templates.js";

export interface SandboxDeps {
  config: Pick<
    Config,
    "maxBodyBytes" | "maxUploadBytes" | "executeOutputBudgetBytes" | "fileIdleTimeoutSeconds"
  >;
  /** The project's auth handlers (langgraph.json `auth`): sandboxes, volumes, templates and pools are theirs too. */
  auth?: CustomAuth;
  storage: Pick<Storage, "sandboxes" | "sandboxBoxes">;
  /** Sandboxes, pools and their driver; the server starts and closes it. */
  boxes: BoxService;
  /** Volumes and templates. */
  volumes: VolumeTemplateService;
}

// ---- wire shapes -----------------------------------------------------------------------------

const volumeOut = (v: VolumeRecord) => ({
  id: v.id,
  name: v.name,
  size: v.size,
  storage_class: v.storage_class,
  created_at: v.created_at,
  updated_at: v.updated_at,
});

const templateOut = (t: TemplateRecord) => ({
  id: t.id,
  name: t.name,
  image: t.image,
  resources: t.resources,
  volume_mounts: t.volume_mounts,
  created_at: t.created_at,
  updated_at: t.updated_at,
});

/** `offset` is where the next page starts, or 0 when there is none. */
const nextOffset = (page: SandboxPage<unknown>, offset: number) =>
  page.hasMore ? offset + page.items.length : 0;

// ---- validation: the spec's 422 has `loc` as an array of strings -----------------------------

function stringLocs(err: unknown): unknown {
  if (err instanceof HangarError && err.kind === "validation" && err.issues) {
    return validationFailed(err.issues.map((i) => ({ ...i, loc: i.loc.map(String) })));
  }
  return err;
}

async function bodyOf<T extends z.ZodType>(c: Parameters<typeof body>[0], schema: T): Promise<z.output<T>> {
  try {
    return await body(c, schema);
  } catch (err) {
    throw stringLocs(err);
  }
}

function queryOf<T extends z.ZodType>(c: Parameters<typeof query>[0], schema: T): z.output<T> {
  try {
    return query(c, schema);
  } catch (err) {
    throw stringLocs(err);
  }
}

const nameOf = (c: Parameters<typeof params>[0]): string => params(c, S.NamePath).name;

// ---- routes ----------------------------------------------------------------------------------

export function sandboxRoutes(deps: SandboxDeps): Hono<AppEnv> {
  const { boxes, volumes: service } = deps;
  const authz = new SandboxAuthz(deps.auth);

  /** The volume named in the path, if this user may `action` it (404 as if absent otherwise). */
  const volumeFor = (c: Context<AppEnv>, action: AuthAction, name: string, value: object = {}) =>
    authz.visible(
      c,
      "volumes",
      action,
      { name, ...value },
      () => service.getVolume(orgOf(c), name),
      () => volumeNotFound(name),
    );
  const templateFor = (c: Context<AppEnv>, action: AuthAction, name: string, value: object = {}) =>
    authz.visible(
      c,
      "templates",
      action,
      { name, ...value },
      () => service.getTemplate(orgOf(c), name),
      () => templateNotFound(name),
    );

  /**
   * A template mounts only volumes this user may read (`volumes:read`): one it may not is missing,
   * named with the absent ones in request order, as storage names those.
   */
  const assertMountable = async (c: Context<AppEnv>, mounts: { volume_name: string }[]) => {
    if (!deps.auth || mounts.length === 0) return;
    const missing: string[] = [];
    for (const name of new Set(mounts.map((m) => m.volume_name))) {
      const readable = await authz.allows(c, "volumes", "read", { name });
      const volume = await deps.storage.sandboxes.getVolume(orgOf(c), name);
      if (!volume || !readable(volume.metadata)) missing.push(name);
    }
    if (missing.length > 0) throw mountedVolumesNotFound(missing);
  };

  /** Of these records, those this user may read (what a 409 "in use by …" may name). */
  const readableOf =
    (c: Context<AppEnv>): Readable =>
    async (kind, names) => {
      if (!deps.auth) return names;
      const load = {
        templates: (n: string) => deps.storage.sandboxes.getTemplate(orgOf(c), n),
        sandboxes: (n: string) => deps.storage.sandboxBoxes.getBox(orgOf(c), n),
        pools: (n: string) => deps.storage.sandboxBoxes.getPool(orgOf(c), n),
      }[kind];
      const shown: string[] = [];
      for (const name of names) {
        const readable = await authz.allows(c, kind, "read", { name }).catch(() => () => false);
        const record = await load(name);
        if (record && readable(record.metadata)) shown.push(name);
      }
      return shown;
    };

  return (
    new Hono<AppEnv>()
      .route("/", boxRoutes(boxes, authz, service))
      // A sandbox's data plane (commands, files, the console's terminal) is `sandboxes:exec`.
      .use("/dataplane/:id/*", async (c, next) => {
        if (!deps.auth) return next();
        const id = c.req.param("id");
        const { filter } = await authz.ask(c, "sandboxes", "exec", { sandbox_id: id });
        const box = filter ? await deps.storage.sandboxBoxes.getBoxById(id) : null;
        if (box && box.org_id === orgOf(c) && !matchesFilter(box.metadata, filter)) throw boxIdNotFound(id);
        return next();
      })
      .route("/", dataplaneRoutes(boxes, deps.config))
      // ---- volumes
      .post("/volumes", async (c) => {
        const b = await bodyOf(c, S.VolumeCreate);
        if (b.storage_class != null && !service.storageClasses.includes(b.storage_class)) {
          throw validationFailed([
            {
              loc: ["body", "storage_class"],
              msg: `Unsupported storage class '${b.storage_class}'; available: ${service.storageClasses.join(", ")}`,
              type: "value_error",
            },
          ]);
        }
        const { value } = await authz.ask(c, "volumes", "create", {
          name: b.name,
          size: b.size.text,
          storage_class: b.storage_class ?? null,
          metadata: {} as Record<string, unknown>,
        });
        const volume = await service.createVolume(orgOf(c), { ...b, metadata: value.metadata });
        return c.json(volumeOut(volume), 201);
      })
      .get("/volumes", async (c) => {
        const q = queryOf(c, S.ListQuery);
        const page = await service.listVolumes(orgOf(c), { ...q, auth: await authz.filter(c, "volumes", q) });
        return c.json({ volumes: page.items.map(volumeOut), offset: nextOffset(page, q.offset) });
      })
      .get("/volumes/:name", async (c) => c.json(volumeOut(await volumeFor(c, "read", nameOf(c)))))
      .patch("/volumes/:name", async (c) => {
        const name = nameOf(c);
        const b = await bodyOf(c, S.VolumePatch);
        await volumeFor(c, "update", name, { new_name: b.name ?? null, size: b.size?.text ?? null });
        return c.json(volumeOut(await service.updateVolume(orgOf(c), name, b)));
      })
      .delete("/volumes/:name", async (c) => {
        const name = nameOf(c);
        await volumeFor(c, "delete", name);
        await service.deleteVolume(orgOf(c), name, readableOf(c));
        return c.body(null, 204);
      })
      // ---- templates
      .post("/templates", async (c) => {
        const b = await bodyOf(c, S.TemplateCreate);
        const { value } = await authz.ask(c, "templates", "create", {
          name: b.name,
          image: b.image,
          resources: {
            cpu: b.resources.cpu.text,
            memory: b.resources.memory.text,
            ...(b.resources.storage ? { storage: b.resources.storage.text } : {}),
          },
          volume_mounts: (b.volume_mounts ?? []).map((m) => ({
            volume_name: m.volume_name,
            mount_path: m.mount_path,
          })),
          metadata: {} as Record<string, unknown>,
        });
        await assertMountable(c, value.volume_mounts);
        const template = await service.createTemplate(orgOf(c), { ...value, name: b.name, image: b.image });
        return c.json(templateOut(template), 201);
      })
      .get("/templates", async (c) => {
        const q = queryOf(c, S.ListQuery);
        const auth = await authz.filter(c, "templates", q);
        const page = await service.listTemplates(orgOf(c), { ...q, auth });
        return c.json({ templates: page.items.map(templateOut), offset: nextOffset(page, q.offset) });
      })
      .get("/templates/:name", async (c) => c.json(templateOut(await templateFor(c, "read", nameOf(c)))))
      .patch("/templates/:name", async (c) => {
        const name = nameOf(c);
        const b = await bodyOf(c, S.TemplatePatch);
        await templateFor(c, "update", name, { new_name: b.name });
        return c.json(templateOut(await service.renameTemplate(orgOf(c), name, b.name)));
      })
      .delete("/templates/:name", async (c) => {
        const name = nameOf(c);
        await templateFor(c, "delete", name);
        await service.deleteTemplate(orgOf(c), name, readableOf(c));
        return c.body(null, 204);
      })
  );
}
