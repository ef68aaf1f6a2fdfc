/**
 * Sandboxes (`/v2/sandboxes`): volumes, templates, pools and sandboxes with their status; one
 * sandbox with a terminal (lazily loaded xterm.js over the data plane's `/execute/ws`) and a file
 * browser (listing by a command, upload and download through the data plane).
 */
import { lazy, type ReactNode, Suspense, useState } from "react";
import { useConsole } from "../context.js";
import { href, navigate } from "../router.js";
import { headersOf } from "../session.js";
import { Empty, ErrorNote, Section, Status, useAction, useInterval, useLoad, when } from "../util.js";

const Terminal = lazy(() => import("./terminal.js"));

export interface Box {
  id: string;
  name: string;
  template_name: string;
  status: string;
  status_message: string | null;
  dataplane_url: string;
  expires_at: string | null;
  created_at: string;
}

const LIMIT = 500;

/** A table of one kind of resource, a row each with a Delete button. */
function ResourceTable<Row extends { id: string }>(props: {
  testId: string;
  rows: Row[] | undefined;
  columns: [string, (row: Row) => ReactNode][];
  onDelete: (row: Row) => void;
}) {
  return (
    <table className="table" data-testid={props.testId}>
      <thead>
        <tr>
          {props.columns.map(([title]) => (
            <th key={title}>{title}</th>
          ))}
          <th />
        </tr>
      </thead>
      <tbody>
        {props.rows?.map((row) => (
          <tr key={row.id}>
            {props.columns.map(([title, cell]) => (
              <td key={title}>{cell(row)}</td>
            ))}
            <td className="actions">
              <button type="button" className="danger" onClick={() => props.onDelete(row)}>
                Delete
              </button>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function SandboxesPage() {
  const { api } = useConsole();
  const volumes = useLoad(() => api("GET", `/v2/sandboxes/volumes?limit=${LIMIT}`), [api]);
  const templates = useLoad(() => api("GET", `/v2/sandboxes/templates?limit=${LIMIT}`), [api]);
  const pools = useLoad(() => api("GET", `/v2/sandboxes/pools?limit=${LIMIT}`), [api]);
  const boxes = useLoad(() => api("GET", `/v2/sandboxes/boxes?limit=${LIMIT}`), [api]);
  useInterval(boxes.reload, 3000);
  const action = useAction();
  const remove = (kind: string, name: string, reload: () => void) =>
    action.run(async () => {
      if (!confirm(`Delete ${kind.replace(/s$/, "")} ${name}?`)) return;
      await api("DELETE", `/v2/sandboxes/${kind}/${encodeURIComponent(name)}`);
      reload();
    });

  return (
    <>
      <h1>Sandboxes</h1>
      <ErrorNote error={action.error} />
      <Section title="Sandboxes">
        <ErrorNote error={boxes.error} />
        {boxes.data?.sandboxes.length === 0 ? (
          <Empty>No sandboxes.</Empty>
        ) : (
          <ResourceTable
            testId="boxes"
            rows={boxes.data?.sandboxes}
            columns={[
              ["Name", (b: Box) => <a href={href("sandboxes", b.name)}>{b.name}</a>],
              ["Template", (b: Box) => b.template_name],
              [
                "Status",
                (b: Box) => (
                  <>
                    <Status value={b.status} /> <span className="muted small">{b.status_message ?? ""}</span>
                  </>
                ),
              ],
              ["Expires", (b: Box) => when(b.expires_at)],
              ["Created", (b: Box) => when(b.created_at)],
            ]}
            onDelete={(b) => remove("boxes", b.name, boxes.reload)}
          />
        )}
        <CreateForm
          label="New sandbox"
          fields={[
            ["template_name", "Template", ""],
            ["name", "Name (optional)", ""],
          ]}
          submit={async (v) => {
            const box = await api("POST", "/v2/sandboxes/boxes", {
              template_name: v.template_name,
              ...(v.name ? { name: v.name } : {}),
              wait_for_ready: false,
            });
            boxes.reload();
            navigate("sandboxes", box.name);
          }}
        />
      </Section>
      <Section title="Templates">
        <ErrorNote error={templates.error} />
        <ResourceTable
          testId="templates"
          rows={templates.data?.templates}
          columns={[
            ["Name", (t: any) => t.name],
            ["Image", (t: any) => <span className="mono">{t.image}</span>],
            ["CPU", (t: any) => t.resources.cpu],
            ["Memory", (t: any) => t.resources.memory],
            ["Storage", (t: any) => t.resources.storage ?? "—"],
            [
              "Volumes",
              (t: any) =>
                t.volume_mounts.map((m: any) => `${m.volume_name} → ${m.mount_path}`).join(", ") || "—",
            ],
          ]}
          onDelete={(t: any) => remove("templates", t.name, templates.reload)}
        />
        <CreateForm
          label="New template"
          fields={[
            ["name", "Name", ""],
            ["image", "Image", "hangar/host"],
            ["cpu", "CPU", "1"],
            ["memory", "Memory", "512Mi"],
            ["volume", "Volume (optional)", ""],
            ["mount_path", "Mount path", "/data"],
          ]}
          submit={async (v) => {
            await api("POST", "/v2/sandboxes/templates", {
              name: v.name,
              image: v.image,
              resources: { cpu: v.cpu, memory: v.memory },
              volume_mounts: v.volume ? [{ volume_name: v.volume, mount_path: v.mount_path }] : [],
            });
            templates.reload();
          }}
        />
      </Section>
      <Section title="Pools">
        <ErrorNote error={pools.error} />
        <ResourceTable
          testId="pools"
          rows={pools.data?.pools}
          columns={[
            ["Name", (p: any) => p.name],
            ["Template", (p: any) => p.template_name],
            ["Replicas", (p: any) => p.replicas],
            ["Created", (p: any) => when(p.created_at)],
          ]}
          onDelete={(p: any) => remove("pools", p.name, pools.reload)}
        />
        <CreateForm
          label="New pool"
          fields={[
            ["name", "Name", ""],
            ["template_name", "Template", ""],
            ["replicas", "Replicas", "1"],
          ]}
          submit={async (v) => {
            await api("POST", "/v2/sandboxes/pools", {
              name: v.name,
              template_name: v.template_name,
              replicas: Number(v.replicas),
              wait_for_ready: false,
            });
            pools.reload();
          }}
        />
      </Section>
      <Section title="Volumes">
        <ErrorNote error={volumes.error} />
        <ResourceTable
          testId="volumes"
          rows={volumes.data?.volumes}
          columns={[
            ["Name", (v: any) => v.name],
            ["Size", (v: any) => v.size],
            ["Class", (v: any) => v.storage_class],
            ["Created", (v: any) => when(v.created_at)],
          ]}
          onDelete={(v: any) => remove("volumes", v.name, volumes.reload)}
        />
        <CreateForm
          label="New volume"
          fields={[
            ["name", "Name", ""],
            ["size", "Size", "1Gi"],
          ]}
          submit={async (v) => {
            await api("POST", "/v2/sandboxes/volumes", { name: v.name, size: v.size });
            volumes.reload();
          }}
        />
      </Section>
    </>
  );
}

/** A one-line create form: `[key, label, default]` per field. */
function CreateForm(props: {
  label: string;
  fields: [string, string, string][];
  submit: (values: Record<string, string>) => Promise<void>;
}) {
  const [values, setValues] = useState(() => Object.fromEntries(props.fields.map(([k, , d]) => [k, d])));
  const action = useAction();
  return (
    <details className="create">
      <summary>{props.label}</summary>
      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault();
          action.run(() => props.submit(values));
        }}
      >
        {props.fields.map(([key, label]) => (
          <label key={key}>
            {label}
            <input
              aria-label={`${props.label}: ${label}`}
              value={values[key]}
              onChange={(e) => setValues({ ...values, [key]: e.target.value })}
            />
          </label>
        ))}
        <button type="submit" disabled={action.busy}>
          Create
        </button>
      </form>
      <ErrorNote error={action.error} />
    </details>
  );
}

export function SandboxPage({ name }: { name: string }) {
  const { api } = useConsole();
  const box = useLoad<Box>(() => api("GET", `/v2/sandboxes/boxes/${encodeURIComponent(name)}`), [api, name]);
  useInterval(box.reload, 3000);
  const action = useAction();
  const b = box.data;
  const act = (verb: "stop" | "start") =>
    action.run(async () => {
      await api("POST", `/v2/sandboxes/boxes/${encodeURIComponent(name)}/${verb}`);
      box.reload();
    });

  return (
    <>
      <div className="page-head">
        <h1>
          <a href={href("sandboxes")}>Sandboxes</a> / {name}
        </h1>
        {b && <Status value={b.status} />}
        {b?.status === "ready" && (
          <button type="button" className="secondary" onClick={() => act("stop")}>
            Stop
          </button>
        )}
        {b?.status === "stopped" && (
          <button type="button" onClick={() => act("start")}>
            Start
          </button>
        )}
      </div>
      <ErrorNote error={box.error ?? action.error} />
      {b?.status_message && <p className="muted">{b.status_message}</p>}
      {b && b.status !== "ready" && <Empty>The terminal and files open when the sandbox is ready.</Empty>}
      {b?.status === "ready" && (
        <>
          <Section title="Terminal">
            <Suspense fallback={<p className="muted">Loading the terminal…</p>}>
              <Terminal dataplaneUrl={b.dataplane_url} />
            </Suspense>
          </Section>
          <FileBrowser box={b} />
        </>
      )}
    </>
  );
}

interface Entry {
  kind: "d" | "f";
  size: number | null;
  path: string;
}

/** `sh -c` text that is `value` as one word. */
const quote = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;

/** Lists a directory with plain sh (any image has one): `d\t\t<path>` or `f\t<bytes>\t<path>` per entry. */
const listing = (dir: string) =>
  `cd -- ${quote(dir)} || exit 1; for f in * .[!.]* ..?*; do [ -e "$f" ] || [ -L "$f" ] || continue; ` +
  `if [ -d "$f" ]; then printf 'd\\t\\t%s\\n' "$f"; else printf 'f\\t%s\\t%s\\n' "$(wc -c < "$f" 2>/dev/null)" "$f"; fi; done`;

function FileBrowser({ box }: { box: Box }) {
  const { creds } = useConsole();
  const [dir, setDir] = useState("/root");
  const [pathText, setPathText] = useState("/root");
  const action = useAction();
  const dp = (path: string, init?: RequestInit) =>
    fetch(`${box.dataplane_url}${path}`, { ...init, headers: { ...headersOf(creds), ...init?.headers } });

  const entries = useLoad(async () => {
    const res = await dp("/execute", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ command: listing(dir), shell: "/bin/sh", timeout: 10 }),
    });
    const out = await res.json();
    if (!res.ok) throw new Error(`${res.status}: ${JSON.stringify(out.detail)}`);
    if (out.exit_code !== 0) throw new Error(out.stderr || `listing failed (exit ${out.exit_code})`);
    return (out.stdout as string)
      .split("\n")
      .filter(Boolean)
      .map((line): Entry => {
        const [kind, size, ...rest] = line.split("\t");
        return { kind: kind as "d" | "f", size: size ? Number(size) : null, path: rest.join("\t") };
      })
      .sort((a, b) => (a.kind === b.kind ? a.path.localeCompare(b.path) : a.kind === "d" ? -1 : 1));
  }, [box.dataplane_url, dir]);

  const join = (name: string) => (dir.endsWith("/") ? dir + name : `${dir}/${name}`);
  const open = (path: string) => {
    setDir(path);
    setPathText(path);
  };
  const up = () => open(dir.replace(/\/[^/]+\/?$/, "") || "/");

  const download = (name: string) =>
    action.run(async () => {
      const res = await dp(`/download?path=${encodeURIComponent(join(name))}`);
      if (!res.ok) throw new Error(`${res.status}: ${await res.text()}`);
      const url = URL.createObjectURL(await res.blob());
      const a = document.createElement("a");
      a.href = url;
      a.download = name;
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    });

  const upload = (files: FileList | null) =>
    action.run(async () => {
      for (const file of Array.from(files ?? [])) {
        const form = new FormData();
        form.append("file", file);
        const res = await dp(`/upload?path=${encodeURIComponent(join(file.name))}`, {
          method: "POST",
          body: form,
        });
        if (!res.ok) throw new Error(`${res.status}: ${await res.text()}`);
      }
      entries.reload();
    });

  return (
    <Section title="Files">
      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault();
          open(pathText || "/");
        }}
      >
        <button type="button" className="secondary" onClick={up} disabled={dir === "/"}>
          Up
        </button>
        <input
          aria-label="Directory"
          className="grow mono"
          value={pathText}
          onChange={(e) => setPathText(e.target.value)}
        />
        <button type="submit">Open</button>
        <label className="button">
          Upload
          <input aria-label="Upload" type="file" multiple hidden onChange={(e) => upload(e.target.files)} />
        </label>
      </form>
      <ErrorNote error={entries.error ?? action.error} />
      <table className="table" data-testid="files">
        <tbody>
          {entries.data?.map((e) => (
            <tr key={e.path}>
              <td>
                {e.kind === "d" ? (
                  <button type="button" className="link" onClick={() => open(join(e.path))}>
                    {e.path}/
                  </button>
                ) : (
                  <span className="mono">{e.path}</span>
                )}
              </td>
              <td className="muted">{e.kind === "f" ? `${e.size ?? "?"} B` : ""}</td>
              <td className="actions">
                {e.kind === "f" && (
                  <button type="button" className="secondary" onClick={() => download(e.path)}>
                    Download
                  </button>
                )}
              </td>
            </tr>
          ))}
          {entries.data?.length === 0 && (
            <tr>
              <td className="muted">(empty)</td>
            </tr>
          )}
        </tbody>
      </table>
    </Section>
  );
}
