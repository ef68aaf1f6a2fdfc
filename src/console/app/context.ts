/** What every page needs: the SDK client and the credentials it was made with (for raw requests). */
import type { Client } from "@langchain/langgraph-sdk";
import { createContext, useContext } from "react";
import type { Credentials } from "./session.js";

export interface ConsoleContext {
  client: Client;
  creds: Credentials;
  /** A raw API request with the credentials (routes the SDK has no method for). */
  api: <T = any>(method: string, path: string, body?: unknown) => Promise<T>;
}

export const Console = createContext<ConsoleContext | null>(null);

export function useConsole(): ConsoleContext {
  const ctx = useContext(Console);
  if (!ctx) throw new Error("useConsole outside the console");
  return ctx;
}
