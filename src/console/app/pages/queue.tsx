/**
 * The server-wide queue: the figures of `/metrics` (every process's queue, from the database) and the
 * runs of every thread from `POST /runs/search` (Hangar's extension): pending, running, recent outcomes
 * and recent errors (with their stack traces).
 */
import { useConsole } from "../context.js";
import { ErrorNote, Section, useInterval, useLoad } from "../util.js";
import { RunsTable, useAssistantNames, useRunSearch } from "./runs.js";

/** How many runs each list shows at most. */
const IN_FLIGHT = 200;
const RECENT = 50;
const ERRORS = 20;

interface QueueMetrics {
  queue?: { n_pending?: number; n_running?: number; pending_runs_wait_time_max_secs?: number | null };
  workers?: { max?: number; available?: number; active?: number };
  [key: string]: unknown;
}

export function QueuePage() {
  const { api } = useConsole();
  const search = useRunSearch();
  const metrics = useLoad(() => api<QueueMetrics>("GET", "/metrics?format=json"), [api]);
  const runs = useLoad(async () => {
    const [inFlight, recent, errors] = await Promise.all([
      search({ status: ["pending", "running"], limit: IN_FLIGHT }),
      search({ status: ["success", "error", "timeout", "interrupted"], limit: RECENT }),
      search({ status: ["error", "timeout"], limit: ERRORS }),
    ]);
    return { inFlight, recent, errors };
  }, [api]);
  const names = useAssistantNames();
  useInterval(() => {
    metrics.reload();
    runs.reload();
  }, 2000);

  const inFlight = runs.data?.inFlight ?? [];
  const pending = inFlight.filter((r) => r.status === "pending");
  const running = inFlight.filter((r) => r.status === "running");
  const recent = runs.data?.recent ?? [];
  const errors = runs.data?.errors ?? [];
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
        <Figure
          label="recent errors"
          value={runs.data ? `${errors.length}${errors.length === ERRORS ? "+" : ""}` : undefined}
        />
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
      <Section title="Recent errors">
        <RunsTable runs={errors} names={names} onChanged={runs.reload} />
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
