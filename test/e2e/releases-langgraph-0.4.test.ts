/** A project pinned to langgraph-0.4 (fixtures/releases/langgraph-0.4) runs unchanged: see releases-suite.ts. */
import { releaseSuite } from "./releases-suite.js";

releaseSuite("langgraph-0.4");
