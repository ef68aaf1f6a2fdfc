/** Small pieces every page uses: loading data, showing errors, JSON, times and statuses. */
import { type DependencyList, type ReactNode, useCallback, useEffect, useRef, useState } from "react";
import { describeDetail } from "./session.js";

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` when `deps` change (and on `reload()`); a slower earlier answer never overwrites a newer one. */
export function useLoad<T>(load: () => Promise<T>, deps: DependencyList): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  const generation = useRef(0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the caller's deps decide when to load again
  useEffect(() => {
    const mine = ++generation.current;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => mine === generation.current && setState({ data, loading: false }),
      (error) => mine === generation.current && setState((s) => ({ data: s.data, error, loading: false })),
    );
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/** Calls `fn` every `ms` while the page is visible. */
export function useInterval(fn: () => void, ms: number | null): void {
  const saved = useRef(fn);
  saved.current = fn;
  useEffect(() => {
    if (ms == null) return;
    const id = setInterval(() => document.visibilityState === "visible" && saved.current(), ms);
    return () => clearInterval(id);
  }, [ms]);
}

export function errorText(error: unknown): string {
  if (error == null) return "";
  if (error instanceof Error) return sdkErrorText(error.message);
  return typeof error === "string" ? error : JSON.stringify(error);
}

/** The SDK's `HTTP 404: {"detail": …}` as `404: <detail>`, like the console's own requests' errors. */
function sdkErrorText(message: string): string {
  const match = /^HTTP (\d{3}): ([\s\S]*)$/.exec(message);
  if (!match) return message;
  let body: unknown = null;
  try {
    body = JSON.parse(match[2]!);
  } catch {}
  return `${match[1]}: ${describeDetail(body, match[2]!)}`;
}

export function ErrorNote({ error }: { error: unknown }) {
  if (error == null) return null;
  return (
    <div className="error" role="alert">
      {errorText(error)}
    </div>
  );
}

/** Runs an action, keeping its error to show and a busy flag for its button. */
export function useAction() {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const run = useCallback(async (action: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await action();
      return true;
    } catch (err) {
      setError(err);
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { error, busy, run, setError };
}

export function Json({ value, className }: { value: unknown; className?: string }) {
  return <pre className={`json ${className ?? ""}`}>{JSON.stringify(value, null, 2)}</pre>;
}

export function when(iso: string | null | undefined): string {
  if (!iso) return "—";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toLocaleString(undefined, { dateStyle: "short", timeStyle: "medium" });
}

/** The first 8 characters of an id; `tail` for ids that share their beginning (time-ordered checkpoints). */
export const shortId = (id: string | null | undefined, tail = false) =>
  id ? (tail ? id.slice(-8) : id.slice(0, 8)) : "—";

export function Status({ value }: { value: string | null | undefined }) {
  return <span className={`status status-${value ?? "unknown"}`}>{value ?? "—"}</span>;
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>;
}

/** Parses JSON typed by a person; the error names what is wrong. */
export function parseJson(text: string, what: string): unknown {
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`${what} is not valid JSON: ${(err as Error).message}`);
  }
}

export function Section({
  title,
  actions,
  children,
}: {
  title: string;
  actions?: ReactNode;
  children: ReactNode;
}) {
  return (
    <section className="card">
      <header className="card-head">
        <h2>{title}</h2>
        {actions && <div className="actions">{actions}</div>}
      </header>
      {children}
    </section>
  );
}
