/**
 * Response shapes of the sandbox area (`/v2/sandboxes`), for /openapi.json; the request schemas are
 * in `schemas.ts`. They follow `volumeOut` / `templateOut` in `routes.ts`.
 */
import { z } from "zod";

const timestamp = z.string().describe("ISO-8601 date-time (UTC).");

export const Volume = z
  .object({
    id: z.string().describe("UUID; never changes, renames included."),
    name: z.string().describe("Unique within the organization."),
    size: z.string().describe("A Kubernetes quantity, as written at creation or last resize (`10Gi`)."),
    storage_class: z.string(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .describe("A named block of persistent storage.");

export const VolumeMount = z.object({
  volume_name: z.string().describe("The mounted volume's current name (mounts follow renames)."),
  mount_path: z.string(),
});

export const Template = z
  .object({
    id: z.string().describe("UUID; never changes, renames included."),
    name: z.string().describe("Unique within the organization."),
    image: z.string(),
    resources: z.object({ cpu: z.string(), memory: z.string(), storage: z.string().optional() }),
    volume_mounts: z.array(VolumeMount),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .describe("A named sandbox specification: image, resources and volume mounts.");

const nextOffset = z.number().int().min(0).describe("Where the next page starts, or 0 when there is none.");

export const VolumeList = z.object({ volumes: z.array(Volume), offset: nextOffset });
export const TemplateList = z.object({ templates: z.array(Template), offset: nextOffset });

export const Sandbox = z
  .object({
    id: z.string().describe("UUID; never changes, renames included."),
    name: z.string().describe("Unique within the organization."),
    template_name: z.string().describe("The template's current name."),
    status: z.enum(["provisioning", "ready", "failed", "stopped"]),
    status_message: z.string().nullable().describe("Why a sandbox failed or stopped."),
    dataplane_url: z.string().describe("Base URL of `/execute`, `/execute/ws`, `/upload`, `/download`."),
    ttl_seconds: z.number().int().describe("Deleted this long after creation; 0 = never."),
    idle_ttl_seconds: z
      .number()
      .int()
      .describe("Deleted this long after the last data-plane call; 0 = never."),
    expires_at: timestamp.nullable().describe("When the TTLs delete it, or null."),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .describe("An isolated execution environment made from a template.");

export const SandboxStatus = z.object({
  status: z.enum(["provisioning", "ready", "failed", "stopped"]),
  status_message: z.string().nullable(),
});

export const Pool = z
  .object({
    id: z.string(),
    name: z.string(),
    template_name: z.string(),
    replicas: z.number().int().describe("Warm sandboxes kept ready; 0 = paused."),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .describe("Warm sandboxes of a template without volumes, claimed by sandbox creates.");

export const SandboxList = z.object({ sandboxes: z.array(Sandbox), offset: nextOffset });
export const PoolList = z.object({ pools: z.array(Pool), offset: nextOffset });

export const ExecuteResult = z.object({
  stdout: z.string(),
  stderr: z.string(),
  exit_code: z.number().int(),
  truncated: z
    .literal(true)
    .optional()
    .describe("Present when a stream passed 8 MiB: the command was stopped, stderr ends saying which."),
});
export const UploadResult = z.object({ path: z.string(), written: z.number().int() });
