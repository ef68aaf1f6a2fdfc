/**
 * The agent card of an assistant (`GET /.well-known/agent-card.json?assistant_id=…`), in the shape of
 * the A2A version the client asks for, and the base URL its URLs are built from when
 * `HANGAR_PUBLIC_URL` (config/settings.ts) does not say it.
 *
 * Both shapes declare both versions served at the one endpoint: the 1.0 card in `supportedInterfaces`
 * (1.0 first, the preferred); the 0.3 card in its own fields (`url`, `protocolVersion`,
 * `preferredTransport`) with the same `supportedInterfaces` embedded, as `@a2a-js/sdk`'s own server
 * does for a client that sends no `A2A-Version`.
 */
import { createRequire } from "node:module";
import type { Assistant } from "../../storage/ports.js";
import { type A2AVersion, SERVED_VERSIONS } from "./versions.js";

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

export interface AgentInterface {
  url: string;
  protocolBinding: "JSONRPC";
  protocolVersion: A2AVersion;
}

type Skill = {
  id: string;
  name: string;
  description: string;
  tags: string[];
  examples: string[];
  inputModes: string[];
  outputModes: string[];
};

/** The A2A 1.0 card. */
export interface AgentCardV1 {
  name: string;
  description: string;
  supportedInterfaces: AgentInterface[];
  version: string;
  capabilities: { streaming: boolean; pushNotifications: boolean; extendedAgentCard: boolean };
  defaultInputModes: string[];
  defaultOutputModes: string[];
  skills: Skill[];
}

/** The A2A 0.3 card, with the 1.0 interfaces embedded. */
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
  skills: Skill[];
  supportsAuthenticatedExtendedCard: boolean;
  supportedInterfaces: AgentInterface[];
}

/** The 1.0 card of one assistant; `base` is the public or request base URL (no trailing slash). */
export function agentCardV1(assistant: Assistant, base: string): AgentCardV1 {
  const description = assistant.description || `${assistant.name} assistant`;
  const url = `${base}/a2a/${encodeURIComponent(assistant.assistant_id)}`;
  return {
    name: assistant.name,
    description,
    supportedInterfaces: SERVED_VERSIONS.map((protocolVersion) => ({
      url,
      protocolBinding: "JSONRPC",
      protocolVersion,
    })),
    version: SERVER_VERSION,
    capabilities: { streaming: true, pushNotifications: false, extendedAgentCard: false },
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
  };
}

/** The 0.3 card of one assistant: the same facts in 0.3's fields, its interfaces embedded. */
export function agentCard(assistant: Assistant, base: string): AgentCard {
  const v1 = agentCardV1(assistant, base);
  return {
    protocolVersion: "0.3.0",
    name: v1.name,
    description: v1.description,
    url: v1.supportedInterfaces[0].url,
    preferredTransport: "JSONRPC",
    version: v1.version,
    capabilities: { streaming: true, pushNotifications: false, stateTransitionHistory: false },
    defaultInputModes: v1.defaultInputModes,
    defaultOutputModes: v1.defaultOutputModes,
    skills: v1.skills,
    supportsAuthenticatedExtendedCard: false,
    supportedInterfaces: v1.supportedInterfaces,
  };
}
