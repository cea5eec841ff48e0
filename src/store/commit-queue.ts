// The queue every write to a file goes through: it commits jobs in batches (group commit) and
// runs exclusive tasks alone between them. StateStore (state.json), AppendFile (a transcript or a
// journal) and the write-ahead log are each one CommitQueue with their own `commit`. (Where a
// name's file writes take their place among its row's mutations is write-order.ts'; how many
// compactions run at once, compaction-slots.ts'.)
//
// Rules, the same for every user:
// - Jobs are committed in push order. Jobs pushed while a commit runs form the next batch, so one
//   write (and one sync) answers all of them; `batchSize` may cut a batch shorter.
// - With `gatherMs`, a batch about to start with fewer jobs than the callers seen lately (the last
//   batch and the jobs that came while it ran) waits for the rest, at most `gatherMs(last commit's
//   duration)`: when a commit costs milliseconds (state.json at thousands of sessions), the
//   callers the last commit answered come back well within it, and one commit answers them all
//   instead of every other one. A lone caller never waits; a crowd that shrank waits once.
// - A batch never crosses an exclusive task: the task runs after every job pushed before it and
//   before every job pushed after it (a compaction or a removal cannot lose an append).
// - `commit` throwing rejects every job of its batch with that error; it may instead return one
//   error (or undefined) per job. Nothing is retried here, nothing is swallowed: every job's
//   promise settles with its own outcome, and the queue goes on with the next batch.

export interface CommitQueueOptions<J> {
  /** Commits one batch, in push order. Resolves when it is done; see the rules above for failures. */
  commit(batch: J[]): Promise<readonly unknown[] | void>;
  /** How many of the `waiting` jobs (all before the next task; at least one) the next batch takes. */
  batchSize?(waiting: readonly J[]): number;
  /** How long (ms) the next batch may wait for the callers seen lately, given the last commit's duration (ms); 0: not at all. */
  gatherMs?(lastCommitMs: number): number;
}

type Entry<J> =
  | { readonly kind: 'job'; readonly job: J; resolve(): void; reject(err: unknown): void }
  | { readonly kind: 'task'; run(): Promise<unknown>; resolve(v: unknown): void; reject(err: unknown): void };

export class CommitQueue<J> {
  private entries: Entry<J>[] = [];
  private running: Promise<void> | undefined;
  /** How many callers were seen lately: the last batch and the jobs that came while it ran. */
  private crowd = 0;
  private lastCommitMs = 0;
  /** Ends a gathering wait early, once `crowd` jobs are waiting. */
  private gathered: (() => void) | undefined;

  constructor(private readonly options: CommitQueueOptions<J>) {}

  /** Queues `job`; resolves once the batch holding it is committed, rejects with its failure. */
  push(job: J): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.entries.push({ kind: 'job', job, resolve, reject });
      this.running ??= this.drain();
      if (this.gathered && this.entries.length >= this.crowd) this.gathered();
    });
  }

  /** Runs `run` alone, after everything queued before it and before everything queued after it. */
  exclusive<T>(run: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.entries.push({ kind: 'task', run, resolve: resolve as (v: unknown) => void, reject });
      this.running ??= this.drain();
      this.gathered?.(); // a batch never waits across a task
    });
  }

  /** True when nothing is queued or running: a caller may answer at once without reordering. */
  get idle(): boolean {
    return this.running === undefined;
  }

  /** The jobs waiting for a later batch (not the one committing), in push order. */
  waiting(): J[] {
    const out: J[] = [];
    for (const e of this.entries) if (e.kind === 'job') out.push(e.job);
    return out;
  }

  /** Resolves when everything queued so far, and anything queued meanwhile, has settled. */
  async settled(): Promise<void> {
    while (this.running) await this.running;
  }

  private async drain(): Promise<void> {
    try {
      while (this.entries.length > 0) {
        const head = this.entries[0] as Entry<J>;
        if (head.kind === 'task') {
          this.entries.shift();
          try {
            head.resolve(await head.run());
          } catch (err) {
            head.reject(err);
          }
          continue;
        }
        await this.commitNext();
      }
    } finally {
      this.running = undefined;
    }
  }

  /** How long the next batch waits for the callers seen lately: 0 when enough are there. */
  private gatherBudget(): number {
    const budget = this.options.gatherMs?.(this.lastCommitMs) ?? 0;
    if (budget <= 0 || this.entries.length >= this.crowd || this.entries.some((e) => e.kind === 'task')) return 0;
    return budget;
  }

  /** Waits until `crowd` jobs wait, a task is queued, or `budget` ms passed. */
  private async gather(budget: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.gathered = resolve;
      timer = setTimeout(resolve, budget);
    });
    clearTimeout(timer);
    this.gathered = undefined;
  }

  private async commitNext(): Promise<void> {
    const budget = this.gatherBudget();
    if (budget > 0) await this.gather(budget);
    let end = this.entries.findIndex((e) => e.kind === 'task');
    if (end < 0) end = this.entries.length;
    let take = end;
    if (this.options.batchSize && end > 1) {
      const waiting = this.entries.slice(0, end).map((e) => (e as { job: J }).job);
      take = Math.min(end, Math.max(1, this.options.batchSize(waiting)));
    }
    const batch = this.entries.splice(0, take) as Extract<Entry<J>, { kind: 'job' }>[];
    let errors: readonly unknown[] | void;
    const started = performance.now();
    try {
      errors = await this.options.commit(batch.map((e) => e.job));
    } catch (err) {
      for (const e of batch) e.reject(err);
      return;
    } finally {
      this.lastCommitMs = performance.now() - started;
      this.crowd = batch.length + this.entries.length;
    }
    for (const [i, e] of batch.entries()) {
      const err = errors?.[i];
      if (err === undefined) e.resolve();
      else e.reject(err);
    }
  }
}
