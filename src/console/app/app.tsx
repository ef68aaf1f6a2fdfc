/**
 * The shell: sign-in when the server wants credentials, then the navigation and the page the hash
 * route names.
 */
import {
  Component,
  lazy,
  type ReactNode,
  Suspense,
  useCallback,
  useEffect,
  useMemo,
  useRef,
  useState,
} from "react";
import { Console, type ConsoleContext } from "./context.js";
import { AssistantPage, AssistantsPage } from "./pages/assistants.js";
import { CronsPage } from "./pages/crons.js";
import { QueuePage } from "./pages/queue.js";
import { SandboxesPage, SandboxPage } from "./pages/sandboxes.js";
import { StorePage } from "./pages/store.js";
import { ThreadsPage } from "./pages/threads.js";
import { href, useRoute } from "./router.js";
import {
  ApiError,
  type Credentials,
  clientFor,
  loadCredentials,
  request,
  saveCredentials,
} from "./session.js";
import { errorText } from "./util.js";

// A thread's page brings useStream and LangChain's message classes: the largest part of the bundle.
const ThreadPage = lazy(() => import("./pages/thread.js").then((m) => ({ default: m.ThreadPage })));

const NAV: [string, string][] = [
  ["threads", "Threads"],
  ["runs", "Runs & queue"],
  ["assistants", "Assistants"],
  ["sandboxes", "Sandboxes"],
  ["crons", "Crons"],
  ["store", "Store"],
];

/** What an open server (no keys, no auth handler) is called with: one object, so the client stays the same. */
const NO_CREDENTIALS: Credentials = {};

export function App() {
  const [creds, setCreds] = useState<Credentials | null>(loadCredentials);
  // Without credentials, try the API as it is: a server with no keys needs none. `undefined` while
  // asking; a sign-out asks again.
  const [open, setOpen] = useState<boolean | undefined>(undefined);
  const [probeError, setProbeError] = useState<unknown>(null);
  /** Why the sign-in form is shown again (credentials the server now refuses). */
  const [notice, setNotice] = useState("");
  useEffect(() => {
    if (creds || open !== undefined) return;
    request({}, "POST", "/threads/search", { limit: 1 }).then(
      () => setOpen(true),
      (err) => {
        if (err instanceof ApiError && (err.status === 401 || err.status === 403)) setOpen(false);
        else setProbeError(err);
      },
    );
  }, [creds, open]);

  const signOut = () => {
    saveCredentials(null);
    setNotice("");
    setOpen(undefined);
    setCreds(null);
  };
  // A 401 once signed in (a revoked key, an expired token; a server that needed none now does): back
  // to the sign-in form, saying why, instead of every page showing the error. Only for the credentials
  // in use: a late answer to a request made with earlier ones (a stream still ending) changes nothing.
  const inUse = useRef<Credentials | null>(null);
  inUse.current = creds ?? (open ? NO_CREDENTIALS : null);
  const refused = useCallback((failed: Credentials) => {
    if (failed !== inUse.current) return;
    saveCredentials(null);
    setNotice(
      failed === NO_CREDENTIALS
        ? "This server now asks for credentials (401)."
        : "The server refused these credentials (401). Sign in again.",
    );
    setOpen(false);
    setCreds(null);
  }, []);
  if (creds) return <Shell creds={creds} signOut={signOut} onRefused={refused} />;
  if (probeError) return <div className="boot error">{errorText(probeError)}</div>;
  if (open === undefined) return <div className="boot">Connecting…</div>;
  if (open) return <Shell creds={NO_CREDENTIALS} onRefused={refused} />;
  return (
    <SignIn
      notice={notice}
      onSignIn={(c) => {
        saveCredentials(c);
        setNotice("");
        setCreds(c);
      }}
    />
  );
}

function SignIn({ notice, onSignIn }: { notice: string; onSignIn: (creds: Credentials) => void }) {
  const [apiKey, setApiKey] = useState("");
  const [authorization, setAuthorization] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    const creds: Credentials = {
      apiKey: apiKey.trim() || undefined,
      authorization: authorization.trim() || undefined,
    };
    setBusy(true);
    setError("");
    try {
      await request(creds, "POST", "/threads/search", { limit: 1 });
      onSignIn(creds);
    } catch (err) {
      setError(err instanceof ApiError && err.status === 401 ? `Refused: ${err.message}` : errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="signin">
      <form className="card" onSubmit={submit}>
        <h1>Hangar console</h1>
        <p>This server needs credentials. They are kept in this browser tab only (sessionStorage).</p>
        {notice && (
          <p className="notice" role="status">
            {notice}
          </p>
        )}
        <label>
          API key
          <input
            type="password"
            name="api-key"
            autoComplete="off"
            value={apiKey}
            onChange={(e) => setApiKey(e.target.value)}
          />
        </label>
        <label>
          Authorization header <small>(for a custom auth handler, e.g. "Bearer …"; optional)</small>
          <input
            type="password"
            name="authorization"
            autoComplete="off"
            value={authorization}
            onChange={(e) => setAuthorization(e.target.value)}
          />
        </label>
        {error && (
          <div className="error" role="alert">
            {error}
          </div>
        )}
        <button type="submit" disabled={busy || (!apiKey.trim() && !authorization.trim())}>
          Sign in
        </button>
      </form>
    </div>
  );
}

function Shell({
  creds,
  signOut,
  onRefused,
}: {
  creds: Credentials;
  signOut?: () => void;
  onRefused: (failed: Credentials) => void;
}) {
  const ctx = useMemo<ConsoleContext>(() => {
    const refused = () => onRefused(creds);
    return {
      creds,
      client: clientFor(creds, refused),
      api: (method, path, body) => request(creds, method, path, body, refused),
    };
  }, [creds, onRefused]);
  const { route, visit } = useRoute();
  const [section = "threads", id] = route;
  return (
    <Console.Provider value={ctx}>
      <div className="shell">
        <nav className="nav">
          <a className="brand" href={href("threads")}>
            Hangar
          </a>
          {NAV.map(([key, label]) => (
            <a key={key} href={href(key)} className={section === key ? "active" : ""}>
              {label}
            </a>
          ))}
          <div className="nav-foot">
            {creds.apiKey && <span title="API key of this session">key …{creds.apiKey.slice(-4)}</span>}
            {signOut && (
              <button type="button" className="link" onClick={signOut}>
                Sign out
              </button>
            )}
            <a href="docs">API reference</a>
          </div>
        </nav>
        <main className="main">
          <PageBoundary key={`${route.join("/")}-${visit}`}>
            <Suspense fallback={<p className="muted">Loading…</p>}>{page(section, id, visit)}</Suspense>
          </PageBoundary>
        </main>
      </div>
    </Console.Provider>
  );
}

/** `visit` keys the pages of one thing: navigating again starts them afresh. */
function page(section: string, id: string | undefined, visit: number) {
  switch (section) {
    case "threads":
      return id ? <ThreadPage key={`${id}-${visit}`} threadId={id} /> : <ThreadsPage />;
    case "runs":
      return <QueuePage />;
    case "assistants":
      return id ? <AssistantPage key={`${id}-${visit}`} assistantId={id} /> : <AssistantsPage />;
    case "sandboxes":
      return id ? <SandboxPage key={`${id}-${visit}`} name={id} /> : <SandboxesPage />;
    case "crons":
      return <CronsPage />;
    case "store":
      return <StorePage />;
    default:
      return <p className="empty">No page here. Pick one on the left.</p>;
  }
}

/** A page that fails to render shows why, with the navigation still there; the next route starts afresh. */
class PageBoundary extends Component<{ children: ReactNode }, { error: unknown }> {
  override state = { error: null as unknown };

  static getDerivedStateFromError(error: unknown) {
    return { error };
  }

  override render() {
    if (this.state.error == null) return this.props.children;
    return (
      <div className="card">
        <h1>This page failed</h1>
        <div className="error" role="alert">
          {errorText(this.state.error)}
        </div>
        <p>
          <a href={href("threads")}>Back to the threads</a>
        </p>
      </div>
    );
  }
}
