/** The long-term memory store: namespaces, then a namespace's items, with search (semantic when configured). */
import { useState } from "react";
import { useConsole } from "../context.js";
import { Empty, ErrorNote, Json, parseJson, Section, useAction, useLoad, when } from "../util.js";

export function StorePage() {
  const { client } = useConsole();
  const namespaces = useLoad(() => client.store.listNamespaces({ limit: 500 }), [client]);
  const [namespace, setNamespace] = useState<string[]>([]);
  const [queryText, setQueryText] = useState("");
  const [filterText, setFilterText] = useState("");
  const [search, setSearch] = useState<{ query?: string; filter?: Record<string, unknown> }>({});
  const [searchError, setSearchError] = useState<unknown>(null);
  const items = useLoad(
    () => client.store.searchItems(namespace, { ...search, limit: 100 }),
    [client, namespace, search],
  );
  const action = useAction();

  return (
    <>
      <h1>Store</h1>
      <div className="split">
        <Section title="Namespaces">
          <ErrorNote error={namespaces.error} />
          <ul className="list">
            <li>
              <button
                type="button"
                className={namespace.length === 0 ? "link active" : "link"}
                onClick={() => setNamespace([])}
              >
                (all)
              </button>
            </li>
            {namespaces.data?.namespaces.map((ns) => (
              <li key={ns.join("\u0000")}>
                <button
                  type="button"
                  className={ns.join("/") === namespace.join("/") ? "link active" : "link"}
                  onClick={() => setNamespace(ns)}
                >
                  {ns.join(" / ")}
                </button>
              </li>
            ))}
          </ul>
        </Section>
        <Section title={namespace.length ? `Items in ${namespace.join(" / ")}` : "Items"}>
          <form
            className="row"
            onSubmit={(e) => {
              e.preventDefault();
              try {
                setSearch({
                  query: queryText || undefined,
                  filter: parseJson(filterText, "Filter") as Record<string, unknown> | undefined,
                });
                setSearchError(null);
              } catch (err) {
                setSearchError(err);
              }
            }}
          >
            <label className="grow">
              Query (semantic when the store has an index)
              <input aria-label="Query" value={queryText} onChange={(e) => setQueryText(e.target.value)} />
            </label>
            <label>
              Filter (JSON)
              <input aria-label="Filter" value={filterText} onChange={(e) => setFilterText(e.target.value)} />
            </label>
            <button type="submit">Search</button>
          </form>
          <ErrorNote error={searchError ?? items.error ?? action.error} />
          {items.data?.items.length === 0 && <Empty>No items.</Empty>}
          <table className="table" data-testid="items">
            <tbody>
              {items.data?.items.map((item) => (
                <tr key={`${item.namespace.join("/")}:${item.key}`}>
                  <td>
                    <div className="mono small muted">{item.namespace.join(" / ")}</div>
                    <strong>{item.key}</strong>
                    {typeof (item as { score?: number }).score === "number" && (
                      <div className="muted small">
                        score {(item as { score?: number }).score?.toFixed(3)}
                      </div>
                    )}
                  </td>
                  <td>
                    <Json value={item.value} />
                  </td>
                  <td className="muted">{when(item.updatedAt)}</td>
                  <td className="actions">
                    <button
                      type="button"
                      className="danger"
                      onClick={() =>
                        action.run(async () => {
                          await client.store.deleteItem(item.namespace, item.key);
                          items.reload();
                          namespaces.reload(); // the last item of a namespace takes it with it
                        })
                      }
                    >
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </Section>
      </div>
    </>
  );
}
