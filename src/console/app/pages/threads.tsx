/** Threads: search by status and metadata, newest first; a new thread starts in the composer. */
import type { ThreadStatus } from "@langchain/langgraph-sdk";
import { useState } from "react";
import { useConsole } from "../context.js";
import { href, navigate } from "../router.js";
import { Empty, ErrorNote, parseJson, Section, Status, useInterval, useLoad, when } from "../util.js";

const STATUSES: ThreadStatus[] = ["idle", "busy", "interrupted", "error"];
const PAGE = 50;

export function ThreadsPage() {
  const { client } = useConsole();
  const [status, setStatus] = useState<ThreadStatus | "">("");
  const [metadataText, setMetadataText] = useState("");
  const [query, setQuery] = useState<{ status?: ThreadStatus; metadata?: Record<string, unknown> }>({});
  const [queryError, setQueryError] = useState<unknown>(null);
  const [offset, setOffset] = useState(0);
  const threads = useLoad(
    () => client.threads.search({ ...query, limit: PAGE, offset, sortBy: "updated_at", sortOrder: "desc" }),
    [client, query, offset],
  );
  useInterval(threads.reload, 5000);

  const search = (e: React.FormEvent) => {
    e.preventDefault();
    try {
      const metadata = parseJson(metadataText, "Metadata") as Record<string, unknown> | undefined;
      setQuery({ status: status || undefined, metadata });
      setOffset(0);
      setQueryError(null);
    } catch (err) {
      setQueryError(err);
    }
  };

  return (
    <>
      <h1>Threads</h1>
      <Section
        title="Search"
        actions={
          <button type="button" onClick={() => navigate("threads", "new")}>
            New thread
          </button>
        }
      >
        <form className="row" onSubmit={search}>
          <label>
            Status
            <select
              aria-label="Status"
              value={status}
              onChange={(e) => setStatus(e.target.value as ThreadStatus | "")}
            >
              <option value="">any</option>
              {STATUSES.map((s) => (
                <option key={s}>{s}</option>
              ))}
            </select>
          </label>
          <label className="grow">
            Metadata (JSON, exact match per key)
            <input
              aria-label="Metadata"
              placeholder='{"user": "ada"}'
              value={metadataText}
              onChange={(e) => setMetadataText(e.target.value)}
            />
          </label>
          <button type="submit">Search</button>
        </form>
        <ErrorNote error={queryError ?? threads.error} />
      </Section>
      <Section title="Threads">
        {threads.data?.length === 0 ? (
          <Empty>No threads match.</Empty>
        ) : (
          <table className="table" data-testid="threads">
            <thead>
              <tr>
                <th>Thread</th>
                <th>Status</th>
                <th>Graph</th>
                <th>Metadata</th>
                <th>Updated</th>
              </tr>
            </thead>
            <tbody>
              {threads.data?.map((t) => (
                <tr key={t.thread_id}>
                  <td>
                    <a href={href("threads", t.thread_id)} className="mono">
                      {t.thread_id}
                    </a>
                  </td>
                  <td>
                    <Status value={t.status} />
                  </td>
                  <td>{String(t.metadata?.graph_id ?? "—")}</td>
                  <td className="mono small">{JSON.stringify(t.metadata ?? {})}</td>
                  <td>{when(t.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <div className="row">
          <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
            Newer
          </button>
          <button
            type="button"
            disabled={(threads.data?.length ?? 0) < PAGE}
            onClick={() => setOffset(offset + PAGE)}
          >
            Older
          </button>
          {(threads.data?.length ?? 0) > 0 && (
            <span className="muted">
              {offset + 1}–{offset + (threads.data?.length ?? 0)}
            </span>
          )}
        </div>
      </Section>
    </>
  );
}
