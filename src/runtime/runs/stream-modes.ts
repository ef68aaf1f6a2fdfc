/**
 * Which stream mode a run event belongs to, for readers that ask for only some modes (a run's join
 * stream with `stream_mode`). Event names are the mode, a `/kind` for messages
 * (`messages/partial`), and `|<namespace>` for a subgraph's events (`updates|child:1`).
 */

/** Events every reader gets whatever modes it asked for: the run's start, its failure, the stream's end. */
const ALWAYS = new Set(["metadata", "error", "end"]);

/** The mode an event name belongs to (`messages/partial|sub:1` → `messages`). */
export function modeOfEvent(event: string): string {
  return event.split("|")[0]!.split("/")[0]!;
}

/**
 * A predicate keeping the events of `modes` (every event when `modes` is empty). `messages-tuple`
 * streams as `messages` events, so asking for either keeps them.
 */
export function eventsOfModes(modes: readonly string[]): (event: string) => boolean {
  if (modes.length === 0) return () => true;
  const wanted = new Set(modes.map((m) => (m === "messages-tuple" ? "messages" : m)));
  return (event) => ALWAYS.has(event) || wanted.has(modeOfEvent(event));
}
