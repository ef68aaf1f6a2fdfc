/**
 * Which A2A version a request speaks, and which operation its method names. Both versions are served
 * on the same endpoint (`POST /a2a/{assistant_id}`), chosen per request:
 *
 * - the `A2A-Version` header (or `?A2A-Version=` query parameter, as the 1.0 spec allows) when the
 *   client sends one: `1.0` or `0.3` (a patch number is ignored); any other is -32009;
 * - without one, the method's name: 1.0's PascalCase names (`SendMessage`) are 1.0, anything else 0.3.
 *   The spec says a request without the header is 0.3; the official LangGraph server, like this one,
 *   answers 1.0 names in 1.0 anyway, so a bare `SendMessage` (curl) works.
 */
import { RPC, RpcError } from "../jsonrpc.js";
import { A2A_ERRORS } from "./messages.js";

export type A2AVersion = "1.0" | "0.3";

/** Newest first: the order the agent card lists its interfaces in (the first is preferred). */
export const SERVED_VERSIONS: readonly A2AVersion[] = ["1.0", "0.3"];

export type Operation =
  | "send"
  | "stream"
  | "get"
  | "cancel"
  | "list"
  | "subscribe"
  | "push-config"
  | "extended-card";

const METHODS: Record<A2AVersion, Record<string, Operation>> = {
  "1.0": {
    SendMessage: "send",
    SendStreamingMessage: "stream",
    GetTask: "get",
    CancelTask: "cancel",
    ListTasks: "list",
    SubscribeToTask: "subscribe",
    CreateTaskPushNotificationConfig: "push-config",
    GetTaskPushNotificationConfig: "push-config",
    ListTaskPushNotificationConfigs: "push-config",
    DeleteTaskPushNotificationConfig: "push-config",
    GetExtendedAgentCard: "extended-card",
  },
  "0.3": {
    "message/send": "send",
    "message/stream": "stream",
    "tasks/get": "get",
    "tasks/cancel": "cancel",
    "tasks/resubscribe": "subscribe",
    "tasks/pushNotificationConfig/set": "push-config",
    "tasks/pushNotificationConfig/get": "push-config",
    "tasks/pushNotificationConfig/list": "push-config",
    "tasks/pushNotificationConfig/delete": "push-config",
    "agent/getAuthenticatedExtendedCard": "extended-card",
  },
};

const hasMethod = (version: A2AVersion, method: string) => Object.hasOwn(METHODS[version], method);

/** `1.0`, `1.0.2`, `1` → "1.0"; `0.3`, `0.3.0` → "0.3"; null for anything else. */
export function parseVersion(value: string): A2AVersion | null {
  const m = /^\s*(\d+)(?:\.(\d+))?(?:\.\d+)?\s*$/.exec(value);
  if (!m) return null;
  const majorMinor = `${Number(m[1])}.${Number(m[2] ?? 0)}`;
  return (SERVED_VERSIONS as readonly string[]).includes(majorMinor) ? (majorMinor as A2AVersion) : null;
}

export function versionNotSupported(value: string): RpcError {
  return new RpcError(
    A2A_ERRORS.VERSION_NOT_SUPPORTED,
    `A2A-Version '${value.slice(0, 40)}' is not supported: this agent serves A2A ${SERVED_VERSIONS.join(" and ")}`,
  );
}

/** The version and operation of a request, or the JSON-RPC error that refuses it. */
export function route(
  requested: string | undefined,
  method: string,
): { version: A2AVersion; operation: Operation } {
  const asked = requested?.trim() ? requested : undefined;
  let version: A2AVersion;
  if (asked !== undefined) {
    const parsed = parseVersion(asked);
    if (!parsed) throw versionNotSupported(asked);
    version = parsed;
  } else {
    version = hasMethod("1.0", method) ? "1.0" : "0.3";
  }
  // Own keys only: a method named `toString` is not an operation.
  if (hasMethod(version, method)) return { version, operation: METHODS[version][method]! };
  const other = SERVED_VERSIONS.find((v) => v !== version && hasMethod(v, method));
  const hint = other
    ? ` ('${method}' is an A2A ${other} method; this request speaks A2A ${version}${asked ? " as its A2A-Version header says" : ""})`
    : "";
  throw new RpcError(RPC.METHOD_NOT_FOUND, `Method not found: ${method}${hint}`);
}
