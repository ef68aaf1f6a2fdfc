/**
 * The storage port contract (test/helpers/storage-contract.ts), cronsRepo.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import { cronInput, isKind, storageContract } from "../helpers/storage-contract.js";
import { makeAssistant, ORG } from "../helpers/storage-records.js";

storageContract((withStorage) => {
  describe("crons", () => {
    test(
      "create, update, search, due listing, tick claims, cascade on thread delete",
      withStorage(async (s) => {
        const a = await makeAssistant(s);
        const t = await s.threads.create(ORG, { thread_id: randomUUID(), metadata: {} }, "raise");
        const input = (over: Record<string, unknown> = {}) => cronInput(a.assistant_id, over);
        await assert.rejects(s.crons.create(ORG, input({ thread_id: randomUUID() })), isKind("not_found"));
        const c1 = await s.crons.create(ORG, input({ thread_id: t.thread_id, next_run_at: 2_000 }));
        const c2 = await s.crons.create(ORG, input({ next_run_at: null, enabled: false }));
        const c3 = await s.crons.create(ORG, input());
        assert.equal(c1.next_run_date, new Date(2_000).toISOString());
        assert.equal(c2.enabled, false);
        const sorted = await s.crons.search(ORG, {
          limit: 10,
          offset: 0,
          sort_by: "next_run_date",
          sort_order: "desc",
        });
        assert.deepEqual(
          sorted.items.map((c) => c.cron_id),
          [c1.cron_id, c3.cron_id, c2.cron_id],
          "nulls last",
        );
        assert.equal(sorted.total, 3);
        assert.equal(await s.crons.count(ORG, { enabled: true }), 2);
        assert.equal(await s.crons.count(ORG, { metadata: { k: "v" }, thread_id: t.thread_id }), 1);
        assert.deepEqual(
          (await s.crons.listDue(1_500, 10)).map((d) => d.cron.cron_id),
          [c3.cron_id],
        );
        assert.equal(await s.crons.nextDueAt(), 1_000);
        assert.equal(await s.crons.claimTick(c3.cron_id, 1_000, 61_000), true);
        assert.equal(await s.crons.claimTick(c3.cron_id, 1_000, 61_000), false, "a tick is won once");
        const updated = await s.crons.update(ORG, c2.cron_id, {
          enabled: true,
          next_run_at: 500,
          metadata: { k: "w" },
        });
        assert.equal(updated?.enabled, true);
        assert.deepEqual(updated?.metadata, { k: "w" });
        assert.equal(await s.crons.nextDueAt(), 500);
        assert.equal(await s.crons.update("org-b", c2.cron_id, { enabled: false }), null);
        await s.threads.delete(ORG, t.thread_id);
        assert.equal(await s.crons.get(ORG, c1.cron_id), null, "deleting the thread deletes its crons");
        assert.equal(await s.crons.delete(ORG, c2.cron_id), true);
        assert.equal(await s.crons.delete(ORG, c2.cron_id), false);
      }),
    );

    test(
      "a cron needs its assistant; searches keep creation order among ties, NULLs last both ways",
      withStorage(async (s) => {
        const a = await makeAssistant(s);
        const input = (over: Record<string, unknown> = {}) => ({
          cron_id: randomUUID(),
          assistant_id: a.assistant_id,
          thread_id: null,
          user_id: null,
          schedule: "* * * * *",
          timezone: null,
          end_time: null,
          enabled: true,
          on_run_completed: "delete" as const,
          payload: {},
          metadata: {},
          next_run_at: 1_000,
          ...over,
        });
        await assert.rejects(s.crons.create(ORG, input({ assistant_id: randomUUID() })), isKind("not_found"));
        const ids: string[] = [];
        for (const next_run_at of [5_000, 5_000, null, 5_000])
          ids.push((await s.crons.create(ORG, input({ next_run_at }))).cron_id);
        const order = async (sort_order: "asc" | "desc") => {
          const q = { sort_by: "next_run_date", sort_order, limit: 3 } as const;
          const first = await s.crons.search(ORG, { ...q, offset: 0 });
          const rest = await s.crons.search(ORG, { ...q, offset: 3 });
          assert.equal(first.total, 4);
          return [...first.items, ...rest.items].map((c) => c.cron_id);
        };
        assert.deepEqual(await order("asc"), [ids[0], ids[1], ids[3], ids[2]]);
        assert.deepEqual(await order("desc"), [ids[3], ids[1], ids[0], ids[2]]);
        assert.deepEqual(
          (await s.crons.listDue(5_000, 10)).map((d) => d.cron.cron_id),
          [ids[0], ids[1], ids[3]],
        );
      }),
    );
  });
});
