/**
 * Which events a reader receives (spec §6; reference protocol-v2.md §1.7), the same for SSE streams
 * and WebSocket subscriptions: the event's channel among `channels` (`custom:<name>` also matches
 * `custom`; `input` is `input.requested` and `input.answered`), and its namespace under one of
 * `namespaces` (a segment without `:` matches the name before an event segment's `:`), at most
 * `depth` below it. No namespaces: every namespace, whatever `depth`.
 */
import type { Channel } from "@langchain/protocol";
import type { ThreadEvent } from "./thread-events.js";

export interface EventFilter {
  channels: readonly string[];
  namespaces?: readonly (readonly string[])[];
  depth?: number;
}

/** The base channels; `custom:<name>` is also one. */
export const CHANNELS: readonly Channel[] = [
  "values",
  "updates",
  "messages",
  "tools",
  "lifecycle",
  "input",
  "checkpoints",
  "tasks",
  "custom",
];

export const isChannel = (value: string): boolean =>
  (CHANNELS as readonly string[]).includes(value) || (value.startsWith("custom:") && value.length > 7);

/** The channel an event is delivered on (undefined: a method no channel selects). */
export function channelOf(event: Pick<ThreadEvent, "method" | "data">): string | undefined {
  switch (event.method) {
    case "input.requested":
    case "input.answered":
      return "input";
    case "custom": {
      const name = (event.data as { name?: unknown } | null)?.name;
      return typeof name === "string" ? `custom:${name}` : "custom";
    }
    default:
      return (CHANNELS as readonly string[]).includes(event.method) ? event.method : undefined;
  }
}

function isPrefixMatch(ns: readonly string[], prefix: readonly string[]): boolean {
  if (prefix.length > ns.length) return false;
  return prefix.every((segment, i) => {
    const candidate = ns[i]!;
    if (candidate === segment) return true;
    return !segment.includes(":") && candidate.split(":")[0] === segment;
  });
}

export function matches(
  event: Pick<ThreadEvent, "method" | "data" | "namespace">,
  filter: EventFilter,
): boolean {
  const channel = channelOf(event);
  if (channel === undefined) return false;
  const wanted =
    filter.channels.includes(channel) ||
    (channel.startsWith("custom:") && filter.channels.includes("custom"));
  if (!wanted) return false;
  const prefixes = filter.namespaces;
  if (!prefixes || prefixes.length === 0) return true;
  return prefixes.some(
    (prefix) =>
      isPrefixMatch(event.namespace, prefix) &&
      (filter.depth === undefined || event.namespace.length - prefix.length <= filter.depth),
  );
}
