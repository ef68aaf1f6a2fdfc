/**
 * What this process's workers are doing, for `GET /metrics`: per worker (the API thread's dispatcher,
 * each executor thread's), its slots, the runs it executes now, and the runs it started and ended since
 * the process started, by how they ended. One row of integers per worker in a `SharedArrayBuffer`: an
 * executor thread writes its own row, the API thread reads them all, with no messages and no waiting.
 */

/** How a run's execution ended here. `handed_back`: requeued (shutdown, lost lease) for another attempt. */
export const RUN_ENDS = ["success", "error", "interrupted", "rolled_back", "handed_back"] as const;
export type RunEnd = (typeof RUN_ENDS)[number];

const SLOTS = 0;
const ACTIVE = 1;
const STARTED = 2;
const FIRST_END = 3;
const WIDTH = FIRST_END + RUN_ENDS.length;

/** One worker's row. */
export class WorkerStats {
  readonly #cells: Int32Array;

  constructor(buffer: SharedArrayBuffer, row: number) {
    this.#cells = new Int32Array(buffer, row * WIDTH * Int32Array.BYTES_PER_ELEMENT, WIDTH);
  }

  /** How many runs this worker executes at once. */
  setSlots(slots: number): void {
    Atomics.store(this.#cells, SLOTS, slots);
  }

  started(): void {
    Atomics.add(this.#cells, ACTIVE, 1);
    Atomics.add(this.#cells, STARTED, 1);
  }

  ended(end: RunEnd): void {
    Atomics.sub(this.#cells, ACTIVE, 1);
    Atomics.add(this.#cells, FIRST_END + RUN_ENDS.indexOf(end), 1);
  }

  read(cell: number): number {
    return Atomics.load(this.#cells, cell);
  }
}

export interface WorkerTotals {
  /** Runs this process executes at once (all its workers' slots). */
  max: number;
  /** Runs executing in this process now. */
  active: number;
  /** Runs this process's workers started since it started (a retried run counts once per attempt). */
  started: number;
  /** Executions that ended since the process started, by how. */
  ended: Record<RunEnd, number>;
}

/** Every worker of this process: row 0 is the API thread's dispatcher, then one row per executor thread. */
export class WorkerStatsTable {
  readonly buffer: SharedArrayBuffer;
  readonly #rows: WorkerStats[];

  constructor(rows: number) {
    this.buffer = new SharedArrayBuffer(rows * WIDTH * Int32Array.BYTES_PER_ELEMENT);
    this.#rows = Array.from({ length: rows }, (_, i) => new WorkerStats(this.buffer, i));
  }

  row(index: number): WorkerStats {
    const row = this.#rows[index];
    if (!row) throw new RangeError(`no worker row ${index}`);
    return row;
  }

  totals(): WorkerTotals {
    const sum = (cell: number) => this.#rows.reduce((n, row) => n + row.read(cell), 0);
    return {
      max: sum(SLOTS),
      active: sum(ACTIVE),
      started: sum(STARTED),
      ended: Object.fromEntries(RUN_ENDS.map((end, i) => [end, sum(FIRST_END + i)])) as Record<
        RunEnd,
        number
      >,
    };
  }
}
