/**
 * The protocol commands the reference server lacks, through SDK 1.15.0's `ThreadStream` (`thread.state`,
 * `thread.input`, `thread.agent`), over SSE and over the WebSocket, against the spec's shapes
 * (`@langchain/protocol` 0.0.21): `state.listCheckpoints` (newest first, `limit`, `before`),
 * `state.fork` (a run from a checkpoint), `input.inject` (the root graph's next input), `agent.getTree`,
 * and their errors.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Client } from "@langchain/langgraph-sdk";
import { type Hangar, REPO_ROOT, startHangar, waitFor } from "../helpers/server.js";
import { recordingWebSocket } from "./fixtures/protocol-clients/scenario.js";

const FIXTURE = join(REPO_ROOT, "test", "e2e", "fixtures", "protocol-clients");

let hangar: Hangar;
before(async () => {
  hangar = await startHangar({ config: join(FIXTURE, "langgraph.json"), env: { HANGAR_TEST_REPLY_MS: "1" } });
});
after(async () => {
  await hangar?.stop();
});

const texts = (values: { messages?: { content: unknown }[] }) =>
  (values.messages ?? []).map((m) =>
    typeof m.content === "string"
      ? m.content
      : (m.content as { text?: string }[]).map((b) => b.text ?? "").join(""),
  );

for (const transport of ["sse", "websocket"] as const) {
  describe(`over ${transport}`, () => {
    const open = () =>
      new Client({ apiUrl: hangar.url }).threads.stream({
        assistantId: "chat",
        ...(transport === "websocket" && {
          transport: "websocket" as const,
          webSocketFactory: recordingWebSocket(undefined, () => {}),
        }),
      });
    type Thread = ReturnType<typeof open>;
    const codeOf = async (promise: Promise<unknown>) =>
      promise.then(
        () => "ok",
        (err: { code?: string }) => err.code,
      );
    /** Runs `text` on the thread and waits until its run is over (the thread's state says so). */
    const chat = async (thread: Thread, text: string) => {
      const { run_id } = (await thread.run.start({
        input: { messages: [{ type: "human", content: text }] },
      })) as {
        run_id: string;
      };
      await fetch(`${hangar.url}/threads/${thread.threadId}/runs/${run_id}/join`);
      return run_id;
    };

    test("state.listCheckpoints: newest first, limit and before page through GET /history's checkpoints", async () => {
      const thread = open();
      await chat(thread, "one");
      const history = (await (
        await fetch(`${hangar.url}/threads/${thread.threadId}/history?limit=50`)
      ).json()) as {
        checkpoint: { checkpoint_id: string };
        metadata: { step: number };
      }[];
      const page1 = (await thread.state.listCheckpoints({ limit: 2 })) as {
        checkpoints: { id: string; timestamp: string; step: number; node_name?: string; metadata?: object }[];
      };
      assert.deepEqual(
        page1.checkpoints.map((c) => c.id),
        history.slice(0, 2).map((h) => h.checkpoint.checkpoint_id),
      );
      assert.deepEqual(
        page1.checkpoints.map((c) => c.step),
        history.slice(0, 2).map((h) => h.metadata.step),
      );
      assert.ok(!Number.isNaN(Date.parse(page1.checkpoints[0]!.timestamp)), "an ISO 8601 timestamp");
      assert.equal(page1.checkpoints[0]!.node_name, "reply", "the last checkpoint is the reply node's");
      const page2 = (await thread.state.listCheckpoints({ limit: 50, before: page1.checkpoints[1]!.id })) as {
        checkpoints: { id: string }[];
      };
      assert.deepEqual(
        page2.checkpoints.map((c) => c.id),
        history.slice(2).map((h) => h.checkpoint.checkpoint_id),
      );
      assert.equal(
        await codeOf(thread.state.listCheckpoints({ before: "1f000000-0000-6000-8000-000000000000" })),
        "no_such_checkpoint",
      );
      assert.equal(await codeOf(thread.state.listCheckpoints({ limit: 0 })), "invalid_argument");
      assert.equal(
        await codeOf(thread.state.listCheckpoints({ namespace: "x" as never })),
        "invalid_argument",
      );
      await thread.close();
    });

    test("state.fork: a run from an earlier checkpoint branches the thread there", async () => {
      const thread = open();
      await chat(thread, "first");
      await chat(thread, "second");
      const { checkpoints } = (await thread.state.listCheckpoints({ limit: 50 })) as {
        checkpoints: { id: string; step: number; node_name?: string }[];
      };
      // The checkpoint after the first reply: fork from there with another message.
      const afterFirst = checkpoints.filter((c) => c.node_name === "reply").at(-1)!;
      const forked = (await thread.state.fork({
        checkpoint_id: afterFirst.id,
        input: { messages: [{ type: "human", content: "instead" }] },
      })) as { run_id: string; thread_id: string };
      assert.equal(forked.thread_id, thread.threadId);
      await fetch(`${hangar.url}/threads/${thread.threadId}/runs/${forked.run_id}/join`);
      const state = await (await fetch(`${hangar.url}/threads/${thread.threadId}/state`)).json();
      assert.deepEqual(texts(state.values), [
        "first",
        "You said: first. That is all.",
        "instead",
        "You said: instead. That is all.",
      ]);
      assert.equal(
        await codeOf(thread.state.fork({ checkpoint_id: "1f000000-0000-6000-8000-000000000000" })),
        "no_such_checkpoint",
      );
      assert.equal(await codeOf(thread.state.fork({} as never)), "invalid_argument");
      await thread.close();
    });

    test("input.inject: the message is the root graph's next input; errors per spec", async () => {
      const fresh = open();
      assert.equal(
        await codeOf(fresh.input.inject({ namespace: [], message: { role: "user", content: "x" } })),
        "no_such_run",
      );
      await fresh.close();
      const thread = open();
      await chat(thread, "hello");
      await thread.input.inject({ namespace: [], message: { role: "user", content: "injected" } });
      const state = await waitFor(async () => {
        const s = await (await fetch(`${hangar.url}/threads/${thread.threadId}/state`)).json();
        return texts(s.values).length === 4 ? s : null;
      });
      assert.deepEqual(texts(state.values).slice(2), ["injected", "You said: injected. That is all."]);
      assert.equal(
        await codeOf(thread.input.inject({ namespace: ["reply"], message: { role: "user", content: "x" } })),
        "not_supported",
      );
      assert.equal(
        await codeOf(
          thread.input.inject({ namespace: [], message: { role: "tool", content: "x" } as never }),
        ),
        "invalid_argument",
      );
      await thread.close();
    });

    test("agent.getTree: the latest run's tree from its lifecycle events; no_such_run before any", async () => {
      const thread = open();
      assert.equal(await codeOf(thread.agent.getTree({})), "no_such_run");
      const runId = await chat(thread, "tree");
      const { tree } = (await thread.agent.getTree({})) as {
        tree: { namespace: string[]; status: string; graph_name: string };
      };
      assert.deepEqual(tree.namespace, []);
      assert.equal(tree.status, "completed");
      assert.equal(tree.graph_name, "chat");
      const byRun = (await thread.agent.getTree({ run_id: runId })) as { tree: unknown };
      assert.deepEqual(byRun.tree, tree);
      assert.equal(
        await codeOf(thread.agent.getTree({ run_id: "1f000000-0000-6000-8000-000000000000" })),
        "no_such_run",
      );
      await thread.close();
    });
  });
}
