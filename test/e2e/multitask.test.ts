import { startHangar } from "../helpers/server.js";
import { multitaskSuite } from "./multitask-suite.js";

// The default: runs execute in executor threads beside the API's.
multitaskSuite("multitask strategies (double texting)", async () => {
  const h = await startHangar();
  return { url: h.url, writeUrl: h.url, stop: () => h.stop() };
});

// Runs executing on the API's own thread (one core, or --executor-threads 0) behave the same.
multitaskSuite("multitask strategies with runs on the API thread (--executor-threads 0)", async () => {
  const h = await startHangar({ args: ["--executor-threads", "0"] });
  return { url: h.url, writeUrl: h.url, stop: () => h.stop() };
});
