/** A project pinned to langchain-1 (fixtures/releases/langchain-1) runs unchanged: see releases-suite.ts. */
import { releaseSuite } from "./releases-suite.js";

releaseSuite("langchain-1");
