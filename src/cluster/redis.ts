import { Redis } from "ioredis";
import type { Logger } from "../logger.js";
import type { StopAction } from "../storage/ports.js";

/**
 * Hangar's link to Redis when it runs as several processes (issue 7): one connection for commands
 * (pipelined, so fire-and-forget publishes keep their order) and one for subscriptions, shared by
 * every subscriber in the process. Every key and channel starts with `prefix`, so several deployments
 * (or test runs) can share one Redis.
 */
export class RedisLink {
  readonly commands: Redis;
  readonly prefix: string;
  readonly #subscriber: Redis;
  readonly #handlers = new Map<string, Set<(message: string) => void>>();
  /** Per channel, the SUBSCRIBE/UNSUBSCRIBE in flight, so they reach Redis in the order they were asked. */
  readonly #pending = new Map<string, Promise<unknown>>();

  private constructor(commands: Redis, subscriber: Redis, prefix: string) {
    this.commands = commands;
    this.#subscriber = subscriber;
    this.prefix = prefix;
    subscriber.on("message", (channel: string, message: string) => {
      for (const handler of this.#handlers.get(channel) ?? []) {
        try {
          handler(message);
        } catch {
          // One bad message or handler must not starve the other subscribers of this channel.
        }
      }
    });
    // After a reconnect (ioredis re-subscribes by itself) messages sent meanwhile are lost: tell whoever
    // waits on announcements to look again.
    subscriber.on("ready", () => {
      for (const listener of this.#reconnectListeners) listener();
    });
  }

  readonly #reconnectListeners = new Set<() => void>();

  /** Calls `listener` whenever the subscriber connection comes back after a disconnect. */
  onReconnect(listener: () => void): () => void {
    this.#reconnectListeners.add(listener);
    return () => this.#reconnectListeners.delete(listener);
  }

  /** Connects both connections; rejects (with the reason) when Redis cannot be reached. */
  static async connect(uri: string, prefix: string, log: Logger): Promise<RedisLink> {
    const clients: Redis[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const client = new Redis(uri, { lazyConnect: true, maxRetriesPerRequest: 3 });
        client.on("error", (err: Error) => log.warn("redis connection error", { error: err.message }));
        clients.push(client);
        await client.connect();
      }
      return new RedisLink(clients[0]!, clients[1]!, prefix);
    } catch (err) {
      for (const client of clients) client.disconnect(); // else a lazy client keeps reconnecting
      throw err;
    }
  }

  /**
   * Calls `handler` with every message on `channel` until the returned function is called. Resolves
   * once Redis confirmed the subscription: a message published after that is delivered.
   */
  async subscribe(channel: string, handler: (message: string) => void): Promise<() => void> {
    let handlers = this.#handlers.get(channel);
    let subscribed: Promise<unknown> | undefined;
    if (!handlers) {
      handlers = new Set();
      this.#handlers.set(channel, handlers);
      subscribed = this.#queue(channel, () => this.#subscriber.subscribe(channel));
    }
    handlers.add(handler);
    try {
      await (subscribed ?? this.#pending.get(channel));
    } catch (err) {
      // Not subscribed: forget the handlers, so the next subscriber of this channel tries again.
      if (this.#handlers.get(channel) === handlers) this.#handlers.delete(channel);
      throw err;
    }
    return () => {
      handlers.delete(handler);
      if (handlers.size === 0 && this.#handlers.get(channel) === handlers) {
        this.#handlers.delete(channel);
        this.#queue(channel, () => this.#subscriber.unsubscribe(channel));
      }
    };
  }

  /** Runs `op` after the channel's previous operation; returns its own outcome (the queue goes on either way). */
  #queue(channel: string, op: () => Promise<unknown>): Promise<unknown> {
    const result = (this.#pending.get(channel) ?? Promise.resolve()).then(op, op);
    const settled = result.catch(() => undefined);
    this.#pending.set(channel, settled);
    void settled.then(() => {
      if (this.#pending.get(channel) === settled) this.#pending.delete(channel);
    });
    return result;
  }

  async close(): Promise<void> {
    this.#handlers.clear();
    await Promise.allSettled([this.commands.quit(), this.#subscriber.quit()]);
  }
}

/**
 * Signals between processes: wake-ups for idle workers (a run was admitted or requeued somewhere) and
 * stop requests for a running run, which reach every worker; the one executing the run acts on it.
 * Pub/sub delivers at most once, so neither is the only record: a stop request is also written on the
 * run row (seen at the worker's next heartbeat, or by the sweeper), and workers claim whatever is due
 * when they start and after every run.
 */
export class ClusterBus {
  readonly #link: RedisLink;
  readonly #wakeChannel: string;
  readonly #stopChannel: string;
  readonly #threadEventsChannel: string;

  constructor(link: RedisLink) {
    this.#link = link;
    this.#wakeChannel = `${link.prefix}wake`;
    this.#stopChannel = `${link.prefix}stop`;
    this.#threadEventsChannel = `${link.prefix}thread-events`;
  }

  /** A thread's protocol events grew (src/protocol/buffer.ts): its followers in other processes look again. */
  notifyThreadEvents(org: string, threadId: string): void {
    void this.#link.commands
      .publish(this.#threadEventsChannel, JSON.stringify([org, threadId]))
      .catch(() => undefined);
  }

  onThreadEvents(handler: (org: string, threadId: string) => void): Promise<() => void> {
    return this.#link.subscribe(this.#threadEventsChannel, (message) => {
      const [org, threadId] = JSON.parse(message) as [unknown, unknown];
      if (typeof org === "string" && typeof threadId === "string") handler(org, threadId);
    });
  }

  wakeWorkers(): void {
    void this.#link.commands.publish(this.#wakeChannel, "").catch(() => undefined);
  }

  onWake(handler: () => void): Promise<() => void> {
    return this.#link.subscribe(this.#wakeChannel, handler);
  }

  stopRun(runId: string, action: StopAction): void {
    void this.#link.commands
      .publish(this.#stopChannel, JSON.stringify({ run_id: runId, action }))
      .catch(() => undefined);
  }

  onStop(handler: (runId: string, action: StopAction) => void): Promise<() => void> {
    return this.#link.subscribe(this.#stopChannel, (message) => {
      const { run_id, action } = JSON.parse(message) as { run_id?: unknown; action?: unknown };
      if (typeof run_id === "string" && (action === "interrupt" || action === "rollback"))
        handler(run_id, action);
    });
  }

  /** Calls `handler` when the link comes back after a disconnect (signals sent meanwhile were lost). */
  onReconnect(handler: () => void): () => void {
    return this.#link.onReconnect(handler);
  }
}
