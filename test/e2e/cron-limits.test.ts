/**
 * What one organization's crons may do (issue 32, item 17), on SQLite and on Postgres: a schedule that
 * fires more often than HANGAR_CRON_MIN_INTERVAL_SECONDS (default 60: what a five-field crontab can
 * express) is a 422 naming `schedule`, on create and on update; an organization holds at most
 * HANGAR_CRONS_PER_ORG crons (429 past it), also when the creates race.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type FreshDatabase, freshDatabase, PG_SKIP } from "../helpers/postgres.js";
import { assertValidation, type Hangar, http, startHangar } from "../helpers/server.js";

const T = { timeout: 60_000 };
const LIMIT = 3;

for (const engine of ["sqlite", "postgres"] as const) {
  describe(`cron limits (${engine})`, { skip: engine === "postgres" ? PG_SKIP : undefined }, () => {
    let h: Hangar;
    let db: FreshDatabase | undefined;
    before(async () => {
      db = engine === "postgres" ? await freshDatabase() : undefined;
      h = await startHangar({
        env: { HANGAR_CRONS_PER_ORG: String(LIMIT), ...(db && { POSTGRES_URI: db.uri }) },
      });
    });
    after(async () => {
      await h?.stop();
      await db?.drop();
    });
    const create = (schedule: string) =>
      http(h.url, "POST", "/runs/crons", { assistant_id: "agent", schedule });

    test("schedules firing more often than once a minute are refused, naming the field", T, async () => {
      for (const schedule of ["* * * * * *", "*/30 * * * * *", "0,59 * * * * *", "@secondly"]) {
        const res = await create(schedule);
        assertValidation(res, "schedule", schedule);
        assert.match(res.body.detail[0].msg, /shortest interval allowed is 60 s/, schedule);
      }
      const minutely = await create("0 * * * * *"); // six fields, once a minute: allowed
      assert.equal(minutely.status, 200, JSON.stringify(minutely.body));
      const patched = await http(h.url, "PATCH", `/runs/crons/${minutely.body.cron_id}`, {
        schedule: "* * * * * *",
      });
      assertValidation(patched, "schedule");
      await http(h.url, "DELETE", `/runs/crons/${minutely.body.cron_id}`);
    });

    test(`at most ${LIMIT} crons per organization, also when ten creates race`, T, async () => {
      const answers = await Promise.all(Array.from({ length: 10 }, () => create("0 0 1 1 *")));
      const created = answers.filter((r) => r.status === 200);
      assert.equal(created.length, LIMIT, JSON.stringify(answers.map((r) => r.status)));
      for (const refused of answers.filter((r) => r.status !== 200)) {
        assert.equal(refused.status, 429, JSON.stringify(refused.body));
        assert.match(refused.body.detail, /Limit of 3 crons per organization/);
      }
      const count = await http(h.url, "POST", "/runs/crons/count", {});
      assert.equal(count.body, LIMIT);
      // Deleting one makes room for one.
      await http(h.url, "DELETE", `/runs/crons/${created[0]!.body.cron_id}`);
      assert.equal((await create("0 0 1 1 *")).status, 200);
      assert.equal((await create("0 0 1 1 *")).status, 429);
    });
  });
}
