import type { WebhooksConfig } from "../../config/sections.js";
import type { Logger } from "../../logger.js";
import type { Interrupt, Run } from "../../storage/ports.js";
import { toJson } from "../graphs/serialize.js";
import { checkWebhookUrl } from "./webhook-policy.js";

/** How an executed run ended, before it is recorded. */
export type RunOutcome =
  | {
      status: "success" | "error" | "interrupted";
      values?: unknown;
      interrupts?: Record<string, Interrupt[]>;
      hasNext: boolean;
      error?: { error: string; message: string };
      /** A failure's stack trace: stored with the run, never sent with the error. */
      stack?: string;
    }
  | { status: "rolled_back" }
  | { status: "handed_back" };

const WEBHOOK_TIMEOUT_MS = 10_000;

/** What a delivery needs: the policy and headers, the in-process fetch for relative URLs, the log. */
export interface WebhookDeps {
  webhooks?: WebhooksConfig;
  localFetch: (request: Request) => Promise<Response>;
  log: Logger;
}

/**
 * POSTs the ended run to its webhook (at most once, best effort: a failing receiver is logged, not
 * retried). A URL starting with `/` is a route of this server and is called in process. langgraph.json
 * `webhooks` keeps only its `allowed_fields` of the payload and checks the URL against its policy again
 * (the policy may have changed since the run was created). Its `headers` (operator secrets) go only where
 * `mayCarryHeaders` says. No delivery follows a redirect: a receiver could send it on to a host the policy
 * refuses, or, without a policy, anywhere.
 */
export async function sendWebhook(deps: WebhookDeps, run: Run, outcome: RunOutcome): Promise<void> {
  const url = run.kwargs.webhook!;
  const settings = deps.webhooks;
  const ended =
    outcome.status === "success" || outcome.status === "error" || outcome.status === "interrupted";
  let payload: Record<string, unknown> = {
    ...run,
    status: outcome.status,
    run_started_at: run.updated_at,
    run_ended_at: new Date().toISOString(),
    webhook_sent_at: new Date().toISOString(),
    values: ended ? outcome.values : undefined,
    error: ended && outcome.error ? outcome.error.message : undefined,
  };
  if (settings?.allowedFields) {
    const keep = new Set(settings.allowedFields);
    payload = Object.fromEntries(Object.entries(payload).filter(([k]) => keep.has(k)));
  }
  const init: RequestInit = {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(mayCarryHeaders(url, settings) && settings?.headers),
    },
    body: toJson(payload),
    signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
    redirect: "manual",
  };
  try {
    await checkWebhookUrl(url, settings?.url);
    const response = url.startsWith("/")
      ? await deps.localFetch(new Request(new URL(url, "http://hangar.local"), init))
      : await fetch(url, init);
    if (!response.ok)
      deps.log.warn("webhook answered an error", { run_id: run.run_id, url, status: response.status });
    await response.body?.cancel();
  } catch (err) {
    deps.log.warn("webhook failed", { run_id: run.run_id, url, error: (err as Error).message });
  }
}

/**
 * Whether a delivery to `url` gets the operator's `webhooks.headers`: a path of this server (delivered in
 * process, it never leaves it), or a URL whose host `webhooks.url.allowed_domains` admits (checked with
 * the rest of the policy before the delivery). Without such a list a tenant names the host, so the
 * secrets would go wherever the tenant wants.
 */
export function mayCarryHeaders(url: string, settings: WebhooksConfig | undefined): boolean {
  return url.startsWith("/") || Boolean(settings?.url?.allowedDomains.length);
}
