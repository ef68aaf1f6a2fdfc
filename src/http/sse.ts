import type { RunEvent } from "../streams/run-log.js";

const HEARTBEAT_MS = 15_000;
const encoder = new TextEncoder();

export interface SseOptions {
  /** Thread-scoped run streams carry event ids (for Last-Event-ID); stateless ones do not. */
  withIds: boolean;
  headers?: Record<string, string>;
  /** Called when the client goes away before the stream ended (for on_disconnect=cancel). */
  onDisconnect?: () => void;
}

/**
 * The one SSE writer: framing, ids, heartbeat comments while idle, and disconnects. `open` receives
 * an AbortSignal that fires when the client goes away, and returns the events to send.
 */
/** An event to send: a run's (numeric id), or a thread stream's (text id, or none). */
export type SseEvent = Omit<RunEvent, "id"> & { id?: number | string };

export function sseResponse(
  open: (signal: AbortSignal) => AsyncIterable<SseEvent>,
  opts: SseOptions,
): Response {
  const disconnect = new AbortController();
  let finished = false;
  let heartbeat: NodeJS.Timeout | undefined;
  let events: AsyncIterator<SseEvent> | undefined;
  // Pulled: the next event is read only when the client took the last one, so a slow reader holds the
  // server to one event (and its heartbeats), never a growing queue.
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      heartbeat = setInterval(() => controller.enqueue(encoder.encode(": heartbeat\n\n")), HEARTBEAT_MS);
      events = open(disconnect.signal)[Symbol.asyncIterator]();
    },
    async pull(controller) {
      try {
        const next = await events!.next();
        if (next.done) {
          finished = true;
          clearInterval(heartbeat);
          controller.close();
          return;
        }
        const e = next.value;
        const id = opts.withIds && e.id !== undefined ? `id: ${e.id}\n` : "";
        controller.enqueue(encoder.encode(`event: ${e.event}\ndata: ${e.data}\n${id}\n`));
      } catch (err) {
        clearInterval(heartbeat);
        if (!disconnect.signal.aborted) controller.error(err);
      }
    },
    cancel() {
      clearInterval(heartbeat);
      disconnect.abort();
      void events?.return?.().catch(() => undefined);
      if (!finished) opts.onDisconnect?.();
    },
  });
  return new Response(stream, {
    headers: {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
      ...opts.headers,
    },
  });
}

/** Parses a Last-Event-ID header: the id after which to resume, or -1 for "from the start". */
export function lastEventId(header: string | undefined): number {
  if (header === undefined || header.trim() === "") return -1;
  const n = Number(header);
  return Number.isInteger(n) && n >= -1 ? n : -1;
}
