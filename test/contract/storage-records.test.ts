/**
 * The storage port contract (test/helpers/storage-contract.ts), every repository's records: the port's fields only, as written and as read.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import { cronInput, storageContract } from "../helpers/storage-contract.js";
import { admission, makeAssistant, ORG } from "../helpers/storage-records.js";

storageContract((withStorage) => {
  describe("records", () => {
    test(
      "a record has the port's fields only (not the table's own: org_id, seq, queue columns), as written and as read",
      withStorage(async (s) => {
        const keys = (record: object | null | undefined) => Object.keys(record ?? {}).sort();
        const a = await makeAssistant(s, { k: 1 });
        const assistantKeys = [
          "assistant_id",
          "config",
          "context",
          "created_at",
          "description",
          "graph_id",
          "metadata",
          "name",
          "updated_at",
          "version",
        ];
        assert.deepEqual(keys(a), assistantKeys);
        assert.deepEqual(await s.assistants.get(ORG, a.assistant_id), a);
        const updated = await s.assistants.update(ORG, a.assistant_id, { metadata: { k: 2 } });
        assert.deepEqual(await s.assistants.get(ORG, a.assistant_id), updated);
        const [version] = await s.assistants.versions(ORG, a.assistant_id, { limit: 1, offset: 0 });
        assert.deepEqual(
          keys(version),
          assistantKeys.filter((k) => k !== "updated_at"),
        );

        const { run } = await s.runs.admit(ORG, admission(a, randomUUID(), { metadata: { m: 1 } }));
        assert.deepEqual(keys(run), [
          "assistant_id",
          "attempt",
          "created_at",
          "kwargs",
          "metadata",
          "multitask_strategy",
          "run_id",
          "status",
          "thread_id",
          "updated_at",
        ]);
        assert.deepEqual(await s.runs.get(ORG, run.thread_id, run.run_id), run);
        const thread = await s.threads.get(ORG, run.thread_id);
        assert.deepEqual(keys(thread), [
          "config",
          "created_at",
          "interrupts",
          "metadata",
          "state_updated_at",
          "status",
          "thread_id",
          "updated_at",
        ]);

        const cron = await s.crons.create(ORG, cronInput(a.assistant_id, { thread_id: run.thread_id }));
        assert.deepEqual(keys(cron), [
          "assistant_id",
          "created_at",
          "cron_id",
          "enabled",
          "end_time",
          "metadata",
          "next_run_date",
          "on_run_completed",
          "payload",
          "schedule",
          "thread_id",
          "timezone",
          "updated_at",
          "user_id",
        ]);
        assert.deepEqual(await s.crons.get(ORG, cron.cron_id), cron);
      }),
    );
  });
});
