/**
 * Generative UI messages in the chat (langgraph.json `ui`), rendered with the SDK's
 * `LoadExternalComponent`: it asks the server for the agent's snippet (`POST /ui/{agent}`), inserts it
 * in a shadow root, and the agent's bundle renders the component there through the page's React.
 *
 * One adaptation, for the console's Content-Security-Policy (`script-src 'self'`, no inline script):
 * the snippet's `<script src onload='…render(name, id)'>` would load but its inline `onload` would be
 * refused. So the console's UI client (`withCspSafeUi`) hands `LoadExternalComponent` the snippet
 * without the script: its style sheets and a marker naming the component; the console loads the
 * bundle's script itself (same origin) and then calls its `render` for each marker inserted, as the
 * `onload` would have. Everything else is the SDK's (its store, its `useStreamContext`).
 *
 * The console provides React, React DOM and the SDK to the bundles, as every page does; modules a
 * project shares through `ui_config.shared` are its own pages' to provide, so components that import
 * one do not render here (the error is shown in their place).
 */
import type { Client } from "@langchain/langgraph-sdk";
// Importing it installs the globals the bundles read: LGUI_REQUIRE (React, the SDK) and the store.
import { isUIMessage, LoadExternalComponent, type UIMessage } from "@langchain/langgraph-sdk/react-ui";

type UiClient = { getComponent(namespace: string, name: string): Promise<string> };
type Bundle = { render(name: string, shadowRootId: string): void };

const patched = new WeakSet<object>();
const scripts = new Map<string, Promise<void>>();

/** The bundle global Hangar (and the reference server) names an agent's: `__LGUI_<agent>`. */
const globalOf = (agent: string) => `__LGUI_${agent.replace(/[^a-zA-Z0-9]/g, "_")}`;

/** Loads a script of the server once (a `<script src>` the console makes: allowed by `'self'`). */
function loadScript(src: string): Promise<void> {
  let loaded = scripts.get(src);
  if (!loaded) {
    loaded = new Promise<void>((resolve, reject) => {
      const script = document.createElement("script");
      script.src = src;
      script.onload = () => resolve();
      script.onerror = () => reject(new Error(`could not load ${src}`));
      document.head.append(script);
    });
    scripts.set(src, loaded);
    loaded.catch(() => scripts.delete(src)); // tried again next time
  }
  return loaded;
}

/** Renders every inserted component marker whose bundle is loaded (each once). */
function renderInserted(): void {
  for (const host of document.querySelectorAll<HTMLElement>("[id^='child-shadow-']")) {
    const marker = host.shadowRoot?.querySelector<HTMLElement>("[data-lgui-name]:not([data-lgui-done])");
    if (!marker) continue;
    const bundle = (window as unknown as Record<string, Bundle | undefined>)[marker.dataset.lguiGlobal ?? ""];
    if (!bundle) continue;
    marker.dataset.lguiDone = "1";
    try {
      bundle.render(marker.dataset.lguiName ?? "", host.id);
    } catch (err) {
      marker.replaceWith(errorNote(`${marker.dataset.lguiName}: ${(err as Error).message}`));
    }
  }
}

function errorNote(text: string): HTMLElement {
  const p = document.createElement("p");
  p.className = "error";
  p.setAttribute("role", "alert");
  p.textContent = text;
  return p;
}

/**
 * The snippet `LoadExternalComponent` inserts: the server's without its script, plus a marker naming
 * the component (built with the DOM, so names are escaped); the script it named is loaded here.
 * A snippet that cannot be had is an error note in the component's place (not an unhandled rejection).
 */
export function withCspSafeUi(client: Client): Client {
  const ui = (client as unknown as { "~ui": UiClient })["~ui"];
  if (!ui || patched.has(ui)) return client;
  patched.add(ui);
  const original = ui.getComponent.bind(ui);
  ui.getComponent = async (namespace, name) => {
    let html: string;
    try {
      html = await original(namespace, name);
    } catch (err) {
      return errorNote(`UI component ${name} of ${namespace}: ${(err as Error).message}`).outerHTML;
    }
    // The inline handler goes before the snippet is parsed: even an inert template's parse of it counts
    // as a CSP violation (Chromium reports one).
    const template = document.createElement("template");
    template.innerHTML = html.replace(/\sonload=('[^']*'|"[^"]*")/gi, "");
    const src = template.content.querySelector("script")?.getAttribute("src");
    for (const script of template.content.querySelectorAll("script")) script.remove();
    const marker = document.createElement("span");
    marker.dataset.lguiName = name;
    marker.dataset.lguiGlobal = globalOf(namespace);
    template.content.append(marker);
    if (src) {
      // After LoadExternalComponent has inserted what this returns (its `.then` runs first).
      loadScript(src).then(
        () => setTimeout(renderInserted, 0),
        () => {},
      );
    }
    return template.innerHTML;
  };
  return client;
}

/** The UI messages of a thread's values (`ui`, as `uiMessageReducer` keeps them). */
export function uiMessagesOf(values: Record<string, unknown> | undefined): UIMessage[] {
  const ui = values?.ui;
  return Array.isArray(ui) ? ui.filter(isUIMessage) : [];
}

/** One UI message, rendered by its agent's component. */
export function UiMessageView(props: {
  message: UIMessage;
  stream: Parameters<typeof LoadExternalComponent>[0]["stream"];
  /** The agent (langgraph.json `ui` key): the thread's graph. */
  namespace: string;
}) {
  const { message } = props;
  return (
    <div className="ui-message" data-testid="ui-message" data-name={message.name}>
      <LoadExternalComponent
        stream={props.stream}
        message={message}
        namespace={props.namespace}
        fallback={<p className="muted small">loading {message.name}…</p>}
      />
    </div>
  );
}
