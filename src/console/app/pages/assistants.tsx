/**
 * Assistants: search by name and graph; each with its graph drawn (lazily loaded: React Flow and
 * dagre are the heaviest part of the bundle), schemas, versions and its config/context editing.
 */
import { lazy, Suspense, useState } from "react";
import { useConsole } from "../context.js";
import { href, navigate } from "../router.js";
import { Empty, ErrorNote, Json, parseJson, Section, shortId, useAction, useLoad, when } from "../util.js";

const GraphView = lazy(() => import("./graph-view.js"));

export function AssistantsPage() {
  const { client } = useConsole();
  const [name, setName] = useState("");
  const [graphId, setGraphId] = useState("");
  const [query, setQuery] = useState({ name: "", graphId: "" });
  const assistants = useLoad(
    () =>
      client.assistants.search({
        name: query.name || undefined,
        graphId: query.graphId || undefined,
        limit: 100,
        sortBy: "updated_at",
        sortOrder: "desc",
      }),
    [client, query],
  );
  return (
    <>
      <h1>Assistants</h1>
      <Section title="Search">
        <form
          className="row"
          onSubmit={(e) => {
            e.preventDefault();
            setQuery({ name, graphId });
          }}
        >
          <label>
            Name
            <input aria-label="Name" value={name} onChange={(e) => setName(e.target.value)} />
          </label>
          <label>
            Graph
            <input aria-label="Graph" value={graphId} onChange={(e) => setGraphId(e.target.value)} />
          </label>
          <button type="submit">Search</button>
        </form>
        <ErrorNote error={assistants.error} />
      </Section>
      <Section title="Assistants">
        {assistants.data?.length === 0 ? (
          <Empty>No assistants match.</Empty>
        ) : (
          <table className="table" data-testid="assistants">
            <thead>
              <tr>
                <th>Name</th>
                <th>Graph</th>
                <th>Version</th>
                <th>Description</th>
                <th>Updated</th>
              </tr>
            </thead>
            <tbody>
              {assistants.data?.map((a) => (
                <tr key={a.assistant_id}>
                  <td>
                    <a href={href("assistants", a.assistant_id)}>{a.name}</a>
                  </td>
                  <td>{a.graph_id}</td>
                  <td>{a.version}</td>
                  <td className="muted">{a.description ?? ""}</td>
                  <td>{when(a.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>
      <CreateAssistant />
    </>
  );
}

function CreateAssistant() {
  const { client } = useConsole();
  const [graphId, setGraphId] = useState("");
  const [name, setName] = useState("");
  const [configText, setConfigText] = useState("");
  const action = useAction();
  return (
    <Section title="New assistant">
      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault();
          action.run(async () => {
            const created = await client.assistants.create({
              graphId,
              name: name || undefined,
              config: parseJson(configText, "Config") as any,
            });
            navigate("assistants", created.assistant_id);
          });
        }}
      >
        <label>
          Graph
          <input
            aria-label="New assistant graph"
            value={graphId}
            onChange={(e) => setGraphId(e.target.value)}
            required
          />
        </label>
        <label>
          Name
          <input aria-label="New assistant name" value={name} onChange={(e) => setName(e.target.value)} />
        </label>
        <label className="grow">
          Config (JSON)
          <input
            aria-label="New assistant config"
            value={configText}
            onChange={(e) => setConfigText(e.target.value)}
          />
        </label>
        <button type="submit" disabled={action.busy}>
          Create
        </button>
      </form>
      <ErrorNote error={action.error} />
    </Section>
  );
}

export function AssistantPage({ assistantId }: { assistantId: string }) {
  const { client } = useConsole();
  const assistant = useLoad(() => client.assistants.get(assistantId), [client, assistantId]);
  const [xray, setXray] = useState(false);
  const graph = useLoad(() => client.assistants.getGraph(assistantId, { xray }), [client, assistantId, xray]);
  const schemas = useLoad(() => client.assistants.getSchemas(assistantId), [client, assistantId]);
  const [recurse, setRecurse] = useState(false);
  const subgraphs = useLoad(
    () => client.assistants.getSubgraphs(assistantId, { recurse }),
    [client, assistantId, recurse],
  );
  const versions = useLoad(
    () => client.assistants.getVersions(assistantId, { limit: 50 }),
    [client, assistantId],
  );
  const a = assistant.data;
  const reload = () => {
    assistant.reload();
    versions.reload();
  };
  const makeLatest = useAction();

  return (
    <>
      <div className="page-head">
        <h1>
          <a href={href("assistants")}>Assistants</a> / {a?.name ?? shortId(assistantId)}
        </h1>
      </div>
      <ErrorNote error={assistant.error} />
      {a && (
        <dl className="facts">
          <dt>Id</dt>
          <dd className="mono">{a.assistant_id}</dd>
          <dt>Graph</dt>
          <dd>{a.graph_id}</dd>
          <dt>Version</dt>
          <dd>{a.version}</dd>
          <dt>Updated</dt>
          <dd>{when(a.updated_at)}</dd>
        </dl>
      )}
      <Section
        title="Graph"
        actions={
          <label className="check">
            <input type="checkbox" checked={xray} onChange={(e) => setXray(e.target.checked)} /> xray
            (subgraphs)
          </label>
        }
      >
        <ErrorNote error={graph.error} />
        {graph.data && (
          <Suspense fallback={<p className="muted">Loading the graph view…</p>}>
            {/* A new graph (xray toggled) mounts a new view, which fits it to the frame. */}
            <GraphView
              key={(graph.data as any).nodes?.map((n: { id: unknown }) => n.id).join()}
              graph={graph.data as any}
            />
          </Suspense>
        )}
      </Section>
      {a && <EditAssistant key={`${a.assistant_id}-${a.version}`} assistant={a} onSaved={reload} />}
      <Section title="Schemas">
        <ErrorNote error={schemas.error} />
        {schemas.data && <SchemaList schemas={schemas.data} />}
      </Section>
      <Section
        title="Subgraphs' schemas"
        actions={
          <label className="check">
            <input type="checkbox" checked={recurse} onChange={(e) => setRecurse(e.target.checked)} /> nested
            (recurse)
          </label>
        }
      >
        <ErrorNote error={subgraphs.error} />
        {subgraphs.data && Object.keys(subgraphs.data).length === 0 && <Empty>No subgraphs.</Empty>}
        {Object.entries(subgraphs.data ?? {}).map(([namespace, schemas]) => (
          <div key={namespace} className="subgraph" data-testid="subgraph" data-namespace={namespace}>
            <h3 className="mono">{namespace}</h3>
            <SchemaList schemas={schemas} />
          </div>
        ))}
      </Section>
      <Section title="Versions">
        <ErrorNote error={versions.error ?? makeLatest.error} />
        <table className="table">
          <thead>
            <tr>
              <th>Version</th>
              <th>Name</th>
              <th>Config</th>
              <th>Created</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {versions.data?.map((v) => (
              <tr key={v.version}>
                <td>{v.version}</td>
                <td>{v.name}</td>
                <td className="mono small">{JSON.stringify(v.config)}</td>
                <td>{when(v.created_at)}</td>
                <td>
                  {a && v.version !== a.version && (
                    <button
                      type="button"
                      className="secondary"
                      disabled={makeLatest.busy}
                      onClick={() =>
                        makeLatest.run(async () => {
                          await client.assistants.setLatest(assistantId, v.version);
                          reload();
                        })
                      }
                    >
                      Make latest
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Section>
    </>
  );
}

const SCHEMAS = ["input_schema", "output_schema", "state_schema", "config_schema", "context_schema"] as const;

/** A graph's (or subgraph's) schemas, each folded. */
function SchemaList({ schemas }: { schemas: Partial<Record<(typeof SCHEMAS)[number], unknown>> }) {
  return (
    <>
      {SCHEMAS.map((k) => (
        <details key={k}>
          <summary>{k.replace("_", " ")}</summary>
          <Json value={schemas[k] ?? null} />
        </details>
      ))}
    </>
  );
}

function EditAssistant({ assistant, onSaved }: { assistant: any; onSaved: () => void }) {
  const { client } = useConsole();
  const [name, setName] = useState(assistant.name ?? "");
  const [description, setDescription] = useState(assistant.description ?? "");
  const [configText, setConfigText] = useState(JSON.stringify(assistant.config ?? {}, null, 2));
  const [contextText, setContextText] = useState(JSON.stringify(assistant.context ?? {}, null, 2));
  const [metadataText, setMetadataText] = useState(JSON.stringify(assistant.metadata ?? {}, null, 2));
  const action = useAction();
  return (
    <Section title="Edit (saves a new version)">
      <form
        className="stack"
        onSubmit={(e) => {
          e.preventDefault();
          action.run(async () => {
            await client.assistants.update(assistant.assistant_id, {
              name,
              description,
              config: parseJson(configText, "Config") as any,
              context: parseJson(contextText, "Context") as any,
              metadata: parseJson(metadataText, "Metadata") as any,
            });
            onSaved();
          });
        }}
      >
        <div className="row">
          <label>
            Name
            <input aria-label="Assistant name" value={name} onChange={(e) => setName(e.target.value)} />
          </label>
          <label className="grow">
            Description
            <input
              aria-label="Description"
              value={description}
              onChange={(e) => setDescription(e.target.value)}
            />
          </label>
        </div>
        <div className="row">
          <label className="grow">
            Config
            <textarea
              aria-label="Assistant config"
              className="mono"
              rows={5}
              value={configText}
              onChange={(e) => setConfigText(e.target.value)}
            />
          </label>
          <label className="grow">
            Context
            <textarea
              aria-label="Assistant context"
              className="mono"
              rows={5}
              value={contextText}
              onChange={(e) => setContextText(e.target.value)}
            />
          </label>
          <label className="grow">
            Metadata
            <textarea
              aria-label="Assistant metadata"
              className="mono"
              rows={5}
              value={metadataText}
              onChange={(e) => setMetadataText(e.target.value)}
            />
          </label>
        </div>
        <ErrorNote error={action.error} />
        <div>
          <button type="submit" disabled={action.busy}>
            Save
          </button>
        </div>
      </form>
    </Section>
  );
}
