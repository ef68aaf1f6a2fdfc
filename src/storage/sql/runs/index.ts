/** The run queue's repository: each operation lives in the file of its concern, beside this one. */
import type * as Port from "../../ports.js";
import type { SqlDatabase } from "../database.js";
import { RunAdmission } from "./admission.js";
import { RunClaims } from "./claims.js";
import { RunCompletion } from "./completion.js";
import { RunLeases } from "./leases.js";
import { RunSearch } from "./search.js";
import { RunStats } from "./stats.js";

export class SqlRuns implements Port.RunsRepo {
  readonly #admission: RunAdmission;
  readonly #search: RunSearch;
  readonly #completion: RunCompletion;
  readonly #claims: RunClaims;
  readonly #leases: RunLeases;
  readonly #stats: RunStats;

  constructor(database: SqlDatabase, checkpointer: Port.CheckpointStore) {
    this.#admission = new RunAdmission(database, checkpointer);
    this.#search = new RunSearch(database, checkpointer);
    this.#completion = new RunCompletion(database, checkpointer);
    this.#claims = new RunClaims(database, checkpointer);
    this.#leases = new RunLeases(database, checkpointer);
    this.#stats = new RunStats(database);
  }

  admit(org: Port.OrgId, a: Port.RunAdmission) {
    return this.#admission.admit(org, a);
  }
  get(org: Port.OrgId, threadId: string | null, runId: string) {
    return this.#search.get(org, threadId, runId);
  }
  list(org: Port.OrgId, threadId: string, q: Port.RunListQuery) {
    return this.#search.list(org, threadId, q);
  }
  search(org: Port.OrgId, q: Port.RunSearchQuery) {
    return this.#search.search(org, q);
  }
  delete(org: Port.OrgId, threadId: string, runId: string) {
    return this.#completion.delete(org, threadId, runId);
  }
  cancelPending(runId: string, action: "interrupt" | "rollback") {
    return this.#completion.cancelPending(runId, action);
  }
  claimNext(lease?: Port.Lease) {
    return this.#claims.claimNext(lease);
  }
  renewLeases(lease: Port.Lease, runIds: string[]) {
    return this.#leases.renewLeases(lease, runIds);
  }
  requestStop(runId: string, action: Port.StopAction) {
    return this.#leases.requestStop(runId, action);
  }
  sweepExpiredLeases(maxAttempts: number) {
    return this.#leases.sweepExpiredLeases(maxAttempts);
  }
  complete(c: Port.RunCompletion) {
    return this.#completion.complete(c);
  }
  completeRolledBack(runId: string) {
    return this.#completion.completeRolledBack(runId);
  }
  requeue(runId: string, attempt?: number) {
    return this.#completion.requeue(runId, attempt);
  }
  recoverInterrupted(maxAttempts: number) {
    return this.#leases.recoverInterrupted(maxAttempts);
  }
  stats() {
    return this.#stats.stats();
  }
}
