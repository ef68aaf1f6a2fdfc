/**
 * Records the storage contract tests create over and over: an assistant, and a run admission with
 * everything a plain `enqueue` run has (override what a test is about).
 */
import { randomUUID } from "node:crypto";
import type { Assistant, RunAdmission, Storage } from "../../src/storage/ports.js";

export const ORG = "default";

export function makeAssistant(storage: Storage, metadata: Record<string, unknown> = {}): Promise<Assistant> {
  return storage.assistants.create(
    ORG,
    {
      assistant_id: randomUUID(),
      graph_id: "agent",
      name: "agent",
      description: null,
      config: {},
      context: {},
      metadata,
    },
    "raise",
  );
}

export function admission(
  assistant: Assistant,
  threadId: string,
  over: Partial<RunAdmission> = {},
): RunAdmission {
  return {
    run_id: randomUUID(),
    thread_id: threadId,
    assistant,
    metadata: {},
    kwargs: {
      config: { configurable: { graph_id: assistant.graph_id } },
      context: {},
      stream_mode: ["values"],
      stream_subgraphs: false,
      stream_resumable: false,
      temporary: false,
    },
    multitask_strategy: "enqueue",
    if_not_exists: "create",
    not_before: new Date(),
    stateless: false,
    ...over,
  };
}
