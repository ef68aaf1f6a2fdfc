/**
 * A terminal into a sandbox: xterm.js over the data plane's `/execute/ws` (docs/sandboxes.md), running
 * one interactive `sh` for the session (`kill_on_disconnect`: closing the page ends it).
 *
 * The data plane gives a command pipes, not a pseudo-terminal, so nothing echoes or edits what is
 * typed: the terminal keeps the line itself (echo, backspace, Enter sends it with its newline) and
 * Ctrl-C ends the shell and starts a new one. Credentials travel as WebSocket subprotocols (a browser
 * cannot set headers on a WebSocket; `src/console/routes.ts` turns them back into headers).
 */
import { Terminal as XTerm } from "@xterm/xterm";
import { useEffect, useRef, useState } from "react";
import { useConsole } from "../context.js";
import type { Credentials } from "../session.js";

const base64url = (text: string) =>
  btoa(String.fromCharCode(...new TextEncoder().encode(text)))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");

function protocols(creds: Credentials): string[] {
  const list = ["hangar.console"];
  if (creds.apiKey) list.push(`hangar.key.${base64url(creds.apiKey)}`);
  if (creds.authorization) list.push(`hangar.authorization.${base64url(creds.authorization)}`);
  return list;
}

/** An interactive shell (no job control: there is no tty) whose prompt and errors come on stdout. */
const SHELL_COMMAND = "export PS1='$ '; exec /bin/sh +m -i 2>&1";

export default function Terminal({ dataplaneUrl }: { dataplaneUrl: string }) {
  const { creds } = useConsole();
  const host = useRef<HTMLDivElement>(null);
  const [state, setState] = useState<"connecting" | "open" | "closed">("connecting");
  const [session, setSession] = useState(0);

  // biome-ignore lint/correctness/useExhaustiveDependencies: a new `session` opens a new shell
  useEffect(() => {
    const term = new XTerm({
      convertEol: true,
      cursorBlink: true,
      rows: 18,
      fontSize: 13,
      fontFamily: "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace",
      theme: { background: "#1e1e1e" },
    });
    term.open(host.current!);
    const url = `${dataplaneUrl.replace(/^http/, "ws")}/execute/ws`;
    const ws = new WebSocket(url, protocols(creds));
    let line = "";
    setState("connecting");

    ws.onopen = () => {
      ws.send(
        JSON.stringify({
          type: "execute",
          command: SHELL_COMMAND,
          shell: "/bin/sh",
          timeout_seconds: 24 * 3600,
          idle_timeout_seconds: 60,
          kill_on_disconnect: true,
          ttl_seconds: 0,
        }),
      );
    };
    ws.onmessage = (event) => {
      const frame = JSON.parse(String(event.data));
      if (frame.type === "started") setState("open");
      else if (frame.type === "stdout" || frame.type === "stderr") term.write(frame.data);
      else if (frame.type === "exit") term.write(`\r\n[exited with ${frame.exit_code}]\r\n`);
      else if (frame.type === "error") term.write(`\r\n[${frame.error_type}: ${frame.error}]\r\n`);
    };
    ws.onclose = (event) => {
      setState("closed");
      if (event.code !== 1000) term.write(`\r\n[connection closed: ${event.code} ${event.reason}]\r\n`);
    };

    const input = term.onData((data) => {
      if (ws.readyState !== WebSocket.OPEN) return;
      for (const ch of data) {
        if (ch === "\r") {
          term.write("\r\n");
          ws.send(JSON.stringify({ type: "input", data: `${line}\n` }));
          line = "";
        } else if (ch === "\x7f" || ch === "\b") {
          if (line.length > 0) {
            line = line.slice(0, -1);
            term.write("\b \b");
          }
        } else if (ch === "\x03") {
          term.write("^C\r\n");
          ws.send(JSON.stringify({ type: "kill" }));
        } else if (ch === "\x04") {
          ws.send(JSON.stringify({ type: "kill" }));
        } else if (ch >= " ") {
          line += ch;
          term.write(ch);
        }
      }
    });
    term.focus();
    return () => {
      input.dispose();
      ws.close();
      term.dispose();
    };
  }, [dataplaneUrl, creds, session]);

  return (
    <div className="terminal-wrap">
      <div className="row">
        <span className="muted" data-testid="terminal-state">
          {state}
        </span>
        <span className="grow" />
        {state === "closed" && (
          <button type="button" className="secondary" onClick={() => setSession((s) => s + 1)}>
            New session
          </button>
        )}
      </div>
      <div ref={host} className="terminal" data-testid="terminal" />
    </div>
  );
}
