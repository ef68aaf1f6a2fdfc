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
