/**
 * /openapi.json metadata of the sandbox area (`/v2/sandboxes`), keyed by `"METHOD /path/{param}"`
 * (see `http/openapi.ts`). Request schemas are the ones `routes.ts` validates with (`schemas.ts`).
 * A route added to `routes.ts` needs its entry here (`test/unit/openapi.test.ts` lists the missing).
 */
import { type ApiDocs, ErrorMessage, type RouteDoc, TypedError } from "../http/openapi.js";
import * as R from "./response-schemas.js";
import * as S from "./schemas.js";

const NAME =
  "A DNS-1035 label of at most 63 characters: lowercase letters, digits and `-`, starting with a letter " +
  "and not ending with `-`. Unique within the organization.";
/** The 429 of a create or resize that would take the organization past its sandbox limits. */
const ORG_LIMITS =
  "Past the organization's sandbox limits (HANGAR_SANDBOXES_PER_ORG sandboxes, warm pool replicas " +
  "included; HANGAR_SANDBOX_ORG_CPU / HANGAR_SANDBOX_ORG_MEMORY together) → 429 naming the limit.";
/** Under custom auth, each volume a sandbox mounts needs the caller's `volumes:update`. */
const HIDDEN_VOLUMES =
  "Under custom auth, a template's volume the caller may not update is answered as missing: 400 " +
  "`VolumeNotFound`.";
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

const box = (summary: string, rest: Partial<RouteDoc> = {}): RouteDoc => ({
  tag: "Sandboxes",
  summary,
  params: S.NamePath,
  ...rest,
});
const pool = (summary: string, rest: Partial<RouteDoc> = {}): RouteDoc => ({
  tag: "Pools",
  summary,
  params: S.NamePath,
  ...rest,
});
const dataplane = (summary: string, rest: Partial<RouteDoc> = {}): RouteDoc => ({
  tag: "Sandbox data plane",
  summary,
  params: S.SandboxIdPath,
  errors: [400, 404],
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
      "Every mounted volume must exist (400 `VolumeNotFound`); mount paths are absolute and distinct; " +
      "the image must be in the image store (400 `ImageNotFound`). `resources` past one sandbox's limits " +
      "(HANGAR_SANDBOX_MAX_CPU / _MEMORY / _STORAGE) → 422 naming the field.",
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
  "DELETE /v2/sandboxes/templates/{name}": template("Delete a template", {
    description: "A template that sandboxes or pools are made from cannot be deleted (409 naming them).",
    errors: [409],
  }),
  "POST /v2/sandboxes/boxes": {
    tag: "Sandboxes",
    summary: "Create a sandbox",
    body: S.BoxCreate,
    status: 201,
    response: R.Sandbox,
    description:
      "Takes a warm sandbox from a pool of the template when one is ready, else starts one. With " +
      "`wait_for_ready` (default) it answers once the sandbox is `ready`: 408 past `timeout` seconds " +
      "(default 30), 503 when it failed to start (`ImagePull`: the image is not in the image store; " +
      "`SandboxConfig`). Without it, it answers at once with status `provisioning`. Unknown template: " +
      `404 \`TemplateNotFound\`. ${ORG_LIMITS} ${HIDDEN_VOLUMES}`,
    errors: [400, 404, 409, 429],
    responses: {
      408: { description: "Not ready within `timeout`" },
      503: { description: "The sandbox failed to start" },
    },
  },
  "GET /v2/sandboxes/boxes": {
    tag: "Sandboxes",
    summary: "List sandboxes",
    query: S.ListQuery,
    response: R.SandboxList,
    description: "In creation order; warm pool members are not listed.",
  },
  "GET /v2/sandboxes/boxes/{name}": box("Get a sandbox", { response: R.Sandbox }),
  "GET /v2/sandboxes/boxes/{name}/status": box("Get a sandbox's status", { response: R.SandboxStatus }),
  "PATCH /v2/sandboxes/boxes/{name}": box("Rename a sandbox or change its TTLs", {
    body: S.BoxPatch,
    response: R.Sandbox,
    errors: [409],
  }),
  "DELETE /v2/sandboxes/boxes/{name}": box("Delete a sandbox", {
    description: "Kills its processes and deletes its files (not its volumes).",
  }),
  "POST /v2/sandboxes/boxes/{name}/stop": box("Stop a sandbox", {
    description: "Kills its processes; its files stay. Status `stopped`.",
  }),
  "POST /v2/sandboxes/boxes/{name}/start": box("Start a stopped sandbox", {
    status: 202,
    response: R.Sandbox,
    description: `Boots it again with its files; poll \`/status\` for \`ready\`. ${HIDDEN_VOLUMES}`,
    errors: [400],
  }),
  "POST /v2/sandboxes/pools": {
    tag: "Pools",
    summary: "Create a pool",
    body: S.PoolCreate,
    status: 201,
    response: R.Pool,
    description:
      "Starts `replicas` warm sandboxes of a template without volumes (400 `LangSmithValidationError` " +
      "otherwise; 400 `TemplateNotFound`). With `wait_for_ready` (default) it waits for them: 504 past " +
      `\`timeout\`. ${ORG_LIMITS}`,
    errors: [400, 409, 429],
    responses: { 504: { description: "Not all replicas ready within `timeout`" } },
  },
  "GET /v2/sandboxes/pools": {
    tag: "Pools",
    summary: "List pools",
    query: S.ListQuery,
    response: R.PoolList,
  },
  "GET /v2/sandboxes/pools/{name}": pool("Get a pool", { response: R.Pool }),
  "PATCH /v2/sandboxes/pools/{name}": pool("Rename or resize a pool", {
    body: S.PoolPatch,
    response: R.Pool,
    description: `\`replicas: 0\` pauses the pool (its warm sandboxes are removed). ${ORG_LIMITS}`,
    errors: [409, 429],
  }),
  "DELETE /v2/sandboxes/pools/{name}": pool("Delete a pool", {
    description: "Deletes its warm sandboxes; sandboxes already claimed from it stay.",
  }),
  "POST /v2/sandboxes/dataplane/{id}/execute": dataplane("Run a command", {
    body: S.ExecuteBody,
    response: R.ExecuteResult,
    description:
      "Runs `shell -c command` in the sandbox (cwd default `/root`) and answers when it exits. A command " +
      "past `timeout` seconds is killed: 408 `CommandTimeout`. One that writes more than 8 MiB to stdout or " +
      "stderr is stopped and answered with what fit and `truncated: true` (so is one that finds the " +
      "server's output budget, HANGAR_SANDBOX_EXECUTE_OUTPUT_BUDGET_MB, spent). 400 `NotReady` when the " +
      "sandbox is not ready. 429 `TooManyCommands` when the sandbox already runs 32 commands " +
      "(`POST /execute` and `/execute/ws` together).",
    errors: [400, 404, 429],
    responses: {
      408: { description: "`CommandTimeout`: the command timed out and was killed", schema: TypedError },
      429: { description: "`TooManyCommands`: the sandbox already runs 32 commands", schema: TypedError },
    },
  }),
  "GET /v2/sandboxes/dataplane/{id}/execute/ws": dataplane("Run a command over a WebSocket", {
    status: 426,
    description:
      "A WebSocket (send `Upgrade: websocket`). First frame `{type: 'execute', command, timeout_seconds, " +
      "shell, env?, cwd?, command_id?, idle_timeout_seconds, kill_on_disconnect, ttl_seconds}` or " +
      "`{type: 'reconnect', command_id, stdout_offset, stderr_offset}`; then `{type: 'kill'}` and " +
      "`{type: 'input', data}`. The server sends `started` (not on reconnect), `stdout`/`stderr` with " +
      "byte `offset`s, then `exit` and closes with 1000; failures are `{type: 'error', error_type, error}` " +
      "(`CommandTimeout`, `CommandNotFound`, `SessionExpired`, `InvalidRequest`, `TooManyCommands`: the " +
      "sandbox already runs 32 commands). The command's output is held while the client does not read. " +
      "A plain GET is answered 426; an upgrade from a browser page whose `Origin` the CORS policy does " +
      "not allow, 403.",
    responses: {
      101: { description: "Switching Protocols: the WebSocket" },
      403: { description: "The page's `Origin` is not allowed (http.cors)", schema: ErrorMessage },
    },
  }),
  "POST /v2/sandboxes/dataplane/{id}/upload": dataplane("Write a file", {
    query: S.FilePathQuery,
    response: R.UploadResult,
    description:
      "multipart/form-data with one part named `file`, streamed into the sandbox; parent directories are " +
      "created. 413 `WriteError` past HANGAR_SANDBOX_MAX_UPLOAD_MB (512 MiB), as soon as that many bytes " +
      "arrived; 400 `WriteError` (a directory target, a body cut before its closing boundary, a failed " +
      "write).",
    responses: {
      413: { description: "`WriteError`: the file is larger than the upload limit", schema: TypedError },
    },
  }),
  "GET /v2/sandboxes/dataplane/{id}/download": dataplane("Read a file", {
    query: S.FilePathQuery,
    contentType: "application/octet-stream",
    description:
      "The file's bytes, streamed, with its `Content-Length`. 404 `FileNotFound`; 400 `ReadError` (a " +
      "directory, anything not a regular file such as `/dev/zero` or a FIFO, unreadable). A transfer in " +
      "which no byte moves for HANGAR_SANDBOX_FILE_IDLE_TIMEOUT_SECONDS (300) is broken off.",
  }),
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
    {
      name: "Sandboxes",
      description: "Isolated execution environments made from templates (`/v2/sandboxes/boxes`).",
    },
    { name: "Pools", description: "Warm sandboxes of a template, for a fast start (`/v2/sandboxes/pools`)." },
    {
      name: "Sandbox data plane",
      description:
        "Commands and files of one sandbox, at its `dataplane_url` (`/v2/sandboxes/dataplane/{id}`).",
    },
  ],
  routes,
  components: {
    Sandbox: R.Sandbox,
    Pool: R.Pool,
    SandboxCreate: S.BoxCreate,
    PoolCreate: S.PoolCreate,
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
