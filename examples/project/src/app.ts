/**
 * The project's own HTTP routes (langgraph.json `http.app`), served in front of the agent server's.
 * A route may call the server itself with `new Client()`: no URL needed.
 */
import { Client } from "@langchain/langgraph-sdk";
import { Hono } from "hono";

export const app = new Hono();

// Every response says which project served it, the built-in routes' included.
app.use(async (c, next) => {
  await next();
  c.header("x-served-by", "example-project");
});

app.get("/hello", (c) => c.json({ hello: "world" }));

/** Asks the agent and answers with its last message. */
app.post("/ask", async (c) => {
  const { question } = await c.req.json<{ question: string }>();
  const state = (await new Client().runs.wait(null, "agent", {
    input: { messages: [{ role: "human", content: question }] },
  })) as { messages: { content: string }[] };
  return c.json({ answer: state.messages.at(-1)?.content });
});
