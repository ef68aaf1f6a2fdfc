/**
 * The server-wide queue: the figures of `/metrics` (every process's queue, from the database) and the
 * runs of the most recently active threads, grouped into pending, running and recent outcomes.
 * The API has no server-wide run list, so the runs are read thread by thread (the 30 most recent).
 */
import type { Run } from "@langchain/langgraph-sdk";
import { useConsole } from "../context.js";
import { ErrorNote, Section, useInterval, useLoad } from "../util.js";
import { RunsTable, useAssistantNames } from "./runs.js";

const THREADS = 30;

interface QueueMetrics {
  queue?: { n_pending?: number; n_running?: number; pending_runs_wait_time_max_secs?: number | null };
  workers?: { max?: number; available?: number; active?: number };
  [key: string]: unknown;
}

export function QueuePage() {
  const { client, api } = useConsole();
  const metrics = useLoad(() => api<QueueMetrics>("GET", "/metrics?format=json"), [api]);
  const runs = useLoad(async () => {
    const threads = await client.threads.search({ limit: THREADS, sortBy: "updated_at", sortOrder: "desc" });
    const lists = await Promise.all(threads.map((t) => client.runs.list(t.thread_id, { limit: 20 })));
    return lists.flat().sort((a, b) => b.created_at.localeCompare(a.created_at));
  }, [client]);
  const names = useAssistantNames();
  useInterval(() => {
    metrics.reload();
    runs.reload();
  }, 2000);

  const all: Run[] = runs.data ?? [];
  const pending = all.filter((r) => r.status === "pending");
  const running = all.filter((r) => r.status === "running");
  const recent = all.filter((r) => r.status !== "pending" && r.status !== "running").slice(0, 50);
  const failed = recent.filter((r) => r.status === "error" || r.status === "timeout");
  const m = metrics.data;

  return (
    <>
      <h1>Runs &amp; queue</h1>
      <div className="figures" data-testid="figures">
        <Figure label="pending (server)" value={m?.queue?.n_pending} />
        <Figure label="running (server)" value={m?.queue?.n_running} />
        <Figure label="longest wait (s)" value={m?.queue?.pending_runs_wait_time_max_secs ?? undefined} />
        <Figure
          label="worker slots free"
          value={m?.workers ? `${m.workers.available} / ${m.workers.max}` : undefined}
        />
        <Figure label="recent errors" value={runs.data ? failed.length : undefined} />
      </div>
      <ErrorNote error={metrics.error ?? runs.error} />
      <Section title={`Pending (${pending.length})`}>
        <RunsTable runs={pending} names={names} onChanged={runs.reload} />
      </Section>
      <Section title={`Running (${running.length})`}>
        <RunsTable runs={running} names={names} onChanged={runs.reload} />
      </Section>
      <Section title="Recent outcomes">
        <RunsTable runs={recent} names={names} onChanged={runs.reload} />
      </Section>
    </>
  );
}

function Figure({ label, value }: { label: string; value: number | string | undefined }) {
  return (
    <div className="figure">
      <div className="figure-value">{value ?? "—"}</div>
      <div className="figure-label">{label}</div>
    </div>
  );
}
