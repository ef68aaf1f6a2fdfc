/**
 * /openapi.json metadata of the sandbox area (`/v2/sandboxes`), keyed by `"METHOD /path/{param}"`
 * (see `http/openapi.ts`). Request schemas are the ones `routes.ts` validates with (`schemas.ts`).
 * A route added to `routes.ts` needs its entry here (`test/unit/openapi.test.ts` lists the missing).
 */
import type { ApiDocs, RouteDoc } from "../http/openapi.js";
import * as R from "./response-schemas.js";
import * as S from "./schemas.js";

const NAME =
  "A DNS-1035 label of at most 63 characters: lowercase letters, digits and `-`, starting with a letter " +
  "and not ending with `-`. Unique within the organization.";
const QUANTITY =
  "A Kubernetes quantity greater than zero: `10Gi`, `512Mi`, `1.5G`, `1e9`, … (binary suffixes `Ki`–`Ei`, " +
  "decimal `n u m k M G T P E`).";

const volume = (summary: string, rest: Partial<RouteDoc> = {}): RouteDoc => ({
  tag: "Volumes",
  summary,
  params: S.NamePath,
  ...rest,
});
const template = (summary: string, rest: Partial<RouteDoc> = {}): RouteDoc => ({
  tag: "Templates",
  summary,
  params: S.NamePath,
  ...rest,
});

const routes: Record<string, RouteDoc> = {
  "POST /v2/sandboxes/volumes": {
    tag: "Volumes",
    summary: "Create a volume",
    body: S.VolumeCreate,
    status: 201,
    response: R.Volume,
    description: "The name is checked (409) and then the organization's storage quota (429), atomically.",
    errors: [409, 429],
  },
  "GET /v2/sandboxes/volumes": {
    tag: "Volumes",
    summary: "List volumes",
    query: S.ListQuery,
    response: R.VolumeList,
    description: "In creation order.",
  },
  "GET /v2/sandboxes/volumes/{name}": volume("Get a volume", { response: R.Volume }),
  "PATCH /v2/sandboxes/volumes/{name}": volume("Rename and/or grow a volume", {
    body: S.VolumePatch,
    response: R.Volume,
    description:
      "Atomic: every check passes or nothing changes. In order: no such volume → 404 `NotFound`; a " +
      "smaller size → 400 `ResizeError`; past the organization's storage quota → 429; the new name is " +
      "taken → 409 `Conflict`. `storage_class` cannot be changed.",
    errors: [400, 409, 429],
  }),
  "DELETE /v2/sandboxes/volumes/{name}": volume("Delete a volume", {
    description: "A volume mounted by a template cannot be deleted (409 `Conflict`).",
    errors: [409],
  }),
  "POST /v2/sandboxes/templates": {
    tag: "Templates",
    summary: "Create a template",
    body: S.TemplateCreate,
    status: 201,
    response: R.Template,
    description:
      "Every mounted volume must exist (400 `VolumeNotFound`); mount paths are absolute and distinct.",
    errors: [400, 409],
  },
  "GET /v2/sandboxes/templates": {
    tag: "Templates",
    summary: "List templates",
    query: S.ListQuery,
    response: R.TemplateList,
    description: "In creation order.",
  },
  "GET /v2/sandboxes/templates/{name}": template("Get a template", { response: R.Template }),
  "PATCH /v2/sandboxes/templates/{name}": template("Rename a template", {
    body: S.TemplatePatch,
    response: R.Template,
    description: "Only the name can change: sending `image`, `resources` or `volume_mounts` is a 422.",
    errors: [409],
  }),
  "DELETE /v2/sandboxes/templates/{name}": template("Delete a template"),
};

/** The sandbox area's metadata for /openapi.json. */
export const sandboxApiDocs: ApiDocs = {
  tags: [
    { name: "Volumes", description: "Named blocks of persistent storage (`/v2/sandboxes/volumes`)." },
    {
      name: "Templates",
      description:
        "Named sandbox specifications: image, resources, volume mounts (`/v2/sandboxes/templates`).",
    },
  ],
  routes,
  components: {
    Volume: R.Volume,
    Template: R.Template,
    VolumeCreate: S.VolumeCreate,
    VolumePatch: S.VolumePatch,
    TemplateCreate: S.TemplateCreate,
    TemplatePatch: S.TemplatePatch,
  },
  annotations: [
    [S.Name, { description: NAME }],
    [S.Bytes, { description: QUANTITY, examples: ["10Gi"] }],
    [
      S.Millicores,
      { description: "A Kubernetes CPU quantity greater than zero: `500m`, `1`, `2.5`.", examples: ["500m"] },
    ],
  ],
};
