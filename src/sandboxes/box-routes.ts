/**
 * The sandbox ("boxes") and pool routes of the control plane, mounted under `/v2/sandboxes` beside
 * volumes and templates (routes.ts). Boxes and pools are addressed by name; a box's data plane is at
 * its `dataplane_url` (dataplane.ts), addressed by id so a rename does not move it.
 *
 * Statuses: 201 create, 200 get/list/patch, 204 delete. Box create: 404 unknown template, 409 name in
 * use, 408 not ready within `timeout`, 503 the sandbox failed to start (`ImagePull`, `SandboxConfig`).
 * Pool create: 400 `TemplateNotFound` / `LangSmithValidationError` (template with volumes), 409, 504.
 */

import { type Context, Hono } from "hono";
import type { AuthAction } from "../auth/custom.js";
import { HangarError, validationFailed } from "../errors.js";
import { type AppEnv, orgOf } from "../http/context.js";
import { mountPrefixOf } from "../http/mount-prefix.js";
import { body, params, query } from "../http/validation.js";
import type { BoxRecord, PoolRecord } from "../storage/ports.js";
import type { SandboxAuthz } from "./authz.js";
import {
  type BoxService,
  boxNotFound,
  boxTemplateNotFound,
  poolNotFound,
  poolTemplateNotFound,
} from "./boxes.js";
import * as S from "./schemas.js";
import { mountedVolumesNotFound, type VolumeTemplateService } from "./volumes-templates.js";

/**
 * Where a box's data plane is, from the origin the client used to reach this server (under the
 * server's `http.mount_prefix`, if any).
 */
const dataplaneUrl = (c: Context<AppEnv>, box: BoxRecord) =>
  `${new URL(c.req.url).origin}${mountPrefixOf(c)}/v2/sandboxes/dataplane/${box.id}`;

const boxOut = (c: Context<AppEnv>, b: BoxRecord) => ({
  id: b.id,
  name: b.name,
  template_name: b.template_name,
  status: b.status,
  status_message: b.status_message,
  dataplane_url: dataplaneUrl(c, b),
  ttl_seconds: b.ttl_seconds,
  idle_ttl_seconds: b.idle_ttl_seconds,
  expires_at: b.expires_at,
  created_at: b.created_at,
  updated_at: b.updated_at,
});

const poolOut = (p: PoolRecord) => ({
  id: p.id,
  name: p.name,
  template_name: p.template_name,
  replicas: p.replicas,
  created_at: p.created_at,
  updated_at: p.updated_at,
});

function stringLocs(err: unknown): unknown {
  if (err instanceof HangarError && err.kind === "validation" && err.issues) {
    return validationFailed(err.issues.map((i) => ({ ...i, loc: i.loc.map(String) })));
  }
  return err;
}

const bodyOf = <T extends Parameters<typeof body>[1]>(c: Context<AppEnv>, schema: T) =>
  body(c, schema).catch((err) => {
    throw stringLocs(err);
  });

function listQuery(c: Context<AppEnv>) {
  try {
    return query(c, S.ListQuery);
  } catch (err) {
    throw stringLocs(err);
  }
}

const nameOf = (c: Context<AppEnv>): string => params(c, S.NamePath).name;
const nextOffset = (hasMore: boolean, offset: number, count: number) => (hasMore ? offset + count : 0);

/**
 * `authz`: custom auth (authz.ts): each route asks the handlers for its resource and action, and a box
 * or pool they hide is not found. `templates`: where a create finds the template it must be able to read.
 */
export function boxRoutes(
  service: BoxService,
  authz: SandboxAuthz,
  templates: VolumeTemplateService,
): Hono<AppEnv> {
  /** The box named in the path, if this user may `action` it (404 as if absent otherwise). */
  const boxFor = (c: Context<AppEnv>, action: AuthAction, value: object = {}) => {
    const name = nameOf(c);
    return authz.visible(
      c,
      "sandboxes",
      action,
      { name, ...value },
      () => service.get(orgOf(c), name),
      () => boxNotFound(name),
    );
  };
  const poolFor = (c: Context<AppEnv>, action: AuthAction, value: object = {}) => {
    const name = nameOf(c);
    return authz.visible(
      c,
      "pools",
      action,
      { name, ...value },
      () => service.getPool(orgOf(c), name),
      () => poolNotFound(name),
    );
  };
  /**
   * Sandboxes and pools are made from a template this user may read (`templates:read`). A sandbox also
   * mounts the template's volumes read-write, so each needs this user's `volumes:update` (checked on
   * create and on every start, since the template's author was asked only when it wrote the template):
   * a volume the user may not update is answered as a missing one.
   */
  const assertUsableTemplate = async (c: Context<AppEnv>, name: string, missing: (name: string) => Error) => {
    if (!authz.enabled) return;
    const readable = await authz.allows(c, "templates", "read", { name });
    const template = await templates.getTemplate(orgOf(c), name).catch(() => null);
    if (!template) return;
    if (!readable(template.metadata)) throw missing(name);
    const hidden: string[] = [];
    for (const volumeName of new Set(template.volume_mounts.map((m) => m.volume_name))) {
      const writable = await authz.allows(c, "volumes", "update", { name: volumeName, mount: true });
      const volume = await templates.getVolume(orgOf(c), volumeName).catch(() => null);
      if (!volume || !writable(volume.metadata)) hidden.push(volumeName);
    }
    if (hidden.length > 0) throw mountedVolumesNotFound(hidden);
  };

  /** The pools a create may take a warm box from: those `pools:read` lets this user see (none if refused). */
  const warmPoolsOf = async (c: Context<AppEnv>, template_name: string) => {
    if (!authz.enabled) return undefined;
    return authz.ask(c, "pools", "read", { template_name }).then(
      (a) => a.filter,
      () => false as const,
    );
  };

  return (
    new Hono<AppEnv>()
      // ---- boxes
      .post("/boxes", async (c) => {
        const b = await bodyOf(c, S.BoxCreate);
        const { value } = await authz.ask(c, "sandboxes", "create", {
          name: b.name ?? null,
          template_name: b.template_name,
          metadata: {} as Record<string, unknown>,
        });
        await assertUsableTemplate(c, b.template_name, boxTemplateNotFound);
        const warm_pools = await warmPoolsOf(c, b.template_name);
        return c.json(
          boxOut(c, await service.create(orgOf(c), { ...b, metadata: value.metadata, warm_pools })),
          201,
        );
      })
      .get("/boxes", async (c) => {
        const q = listQuery(c);
        const page = await service.list(orgOf(c), { ...q, auth: await authz.filter(c, "sandboxes", q) });
        return c.json({
          sandboxes: page.items.map((b) => boxOut(c, b)),
          offset: nextOffset(page.hasMore, q.offset, page.items.length),
        });
      })
      .get("/boxes/:name", async (c) => c.json(boxOut(c, await boxFor(c, "read"))))
      .get("/boxes/:name/status", async (c) => {
        const box = await boxFor(c, "read");
        return c.json({ status: box.status, status_message: box.status_message });
      })
      .patch("/boxes/:name", async (c) => {
        const name = nameOf(c);
        const b = await bodyOf(c, S.BoxPatch);
        await boxFor(c, "update", { patch: b });
        return c.json(boxOut(c, await service.update(orgOf(c), name, b)));
      })
      .delete("/boxes/:name", async (c) => {
        await boxFor(c, "delete");
        await service.delete(orgOf(c), nameOf(c));
        return c.body(null, 204);
      })
      .post("/boxes/:name/stop", async (c) => {
        await boxFor(c, "update", { action: "stop" });
        await service.stopBox(orgOf(c), nameOf(c));
        return c.body(null, 204);
      })
      .post("/boxes/:name/start", async (c) => {
        const box = await boxFor(c, "update", { action: "start" });
        await assertUsableTemplate(c, box.template_name, boxTemplateNotFound);
        return c.json(boxOut(c, await service.startBox(orgOf(c), nameOf(c))), 202);
      })
      // ---- pools
      .post("/pools", async (c) => {
        const b = await bodyOf(c, S.PoolCreate);
        const { value } = await authz.ask(c, "pools", "create", {
          name: b.name,
          template_name: b.template_name,
          replicas: b.replicas,
          metadata: {} as Record<string, unknown>,
        });
        await assertUsableTemplate(c, b.template_name, poolTemplateNotFound);
        return c.json(poolOut(await service.createPool(orgOf(c), { ...b, metadata: value.metadata })), 201);
      })
      .get("/pools", async (c) => {
        const q = listQuery(c);
        const page = await service.listPools(orgOf(c), { ...q, auth: await authz.filter(c, "pools", q) });
        return c.json({
          pools: page.items.map(poolOut),
          offset: nextOffset(page.hasMore, q.offset, page.items.length),
        });
      })
      .get("/pools/:name", async (c) => c.json(poolOut(await poolFor(c, "read"))))
      .patch("/pools/:name", async (c) => {
        const name = nameOf(c);
        const b = await bodyOf(c, S.PoolPatch);
        await poolFor(c, "update", { patch: b });
        return c.json(poolOut(await service.updatePool(orgOf(c), name, b)));
      })
      .delete("/pools/:name", async (c) => {
        await poolFor(c, "delete");
        await service.deletePool(orgOf(c), nameOf(c));
        return c.body(null, 204);
      })
  );
}
