/**
 * The console's entry: styles, then the app. Everything heavier than the first page (a thread with
 * `useStream`, the graph view, the terminal) is imported lazily by the page that shows it; their
 * libraries' style sheets are here, as esbuild does not load the CSS of a lazy chunk by itself.
 */
import "@xterm/xterm/css/xterm.css";
import "@xyflow/react/dist/style.css";
import "./console.css";
import { createRoot } from "react-dom/client";
import { App } from "./app.js";

createRoot(document.getElementById("root")!).render(<App />);
