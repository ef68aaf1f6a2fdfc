/**
 * The A2A v0.3 agent card of an assistant (`GET /.well-known/agent-card.json?assistant_id=…`) and the
 * base URL its `url` is built from when `HANGAR_PUBLIC_URL` (config/settings.ts) does not say it.
 */
import { createRequire } from "node:module";
import type { Assistant } from "../../storage/ports.js";

/** Hangar's version (package.json), for the card's `version` and MCP's `serverInfo`. */
export const SERVER_VERSION: string = createRequire(import.meta.url)("../../../package.json").version;

/** Both text and JSON (data parts) go in and come out. */
export const A2A_MODES = ["application/json", "text/plain"];

/**
 * The base URL as the caller reached this server: the request's origin, with `X-Forwarded-Proto` and
 * `X-Forwarded-Host` (first values) applied when a proxy in front sets them.
 */
export function requestBaseUrl(requestUrl: string, headers: Headers): string {
  const url = new URL(requestUrl);
  const first = (name: string) => headers.get(name)?.split(",")[0]?.trim() || undefined;
  const proto = first("x-forwarded-proto");
  const host = first("x-forwarded-host");
  const scheme = proto === "http" || proto === "https" ? proto : url.protocol.slice(0, -1);
  const validHost = host && /^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:\d{1,5})?$/.test(host);
  return `${scheme}://${validHost ? host : url.host}`;
}

export interface AgentCard {
  protocolVersion: string;
  name: string;
  description: string;
  url: string;
  preferredTransport: "JSONRPC";
  version: string;
  capabilities: { streaming: boolean; pushNotifications: boolean; stateTransitionHistory: boolean };
  defaultInputModes: string[];
  defaultOutputModes: string[];
  skills: {
    id: string;
    name: string;
    description: string;
    tags: string[];
    examples: string[];
    inputModes: string[];
    outputModes: string[];
  }[];
  supportsAuthenticatedExtendedCard: boolean;
}

/** The card of one assistant; `base` is the public or request base URL (no trailing slash). */
export function agentCard(assistant: Assistant, base: string): AgentCard {
  const description = assistant.description || `${assistant.name} assistant`;
  return {
    protocolVersion: "0.3.0",
    name: assistant.name,
    description,
    url: `${base}/a2a/${encodeURIComponent(assistant.assistant_id)}`,
    preferredTransport: "JSONRPC",
    version: SERVER_VERSION,
    capabilities: { streaming: true, pushNotifications: false, stateTransitionHistory: false },
    defaultInputModes: A2A_MODES,
    defaultOutputModes: A2A_MODES,
    skills: [
      {
        id: `${assistant.assistant_id}-main`,
        name: `${assistant.name} Capabilities`,
        description,
        tags: ["assistant", "langgraph"],
        examples: [],
        inputModes: A2A_MODES,
        outputModes: A2A_MODES,
      },
    ],
    supportsAuthenticatedExtendedCard: false,
  };
}
