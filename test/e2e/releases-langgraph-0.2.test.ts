/** A project pinned to langgraph-0.2 (fixtures/releases/langgraph-0.2) runs unchanged: see releases-suite.ts. */
import { refusedReleaseSuite, releaseSuite } from "./releases-suite.js";

releaseSuite("langgraph-0.2");
refusedReleaseSuite();
