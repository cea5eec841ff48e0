// What a bench hands to bench/run.ts: named samples per repetition, turned into rows whose ratio
// is the median of per-repetition ratios (ours and its ceiling measured back to back in the same
// repetition), and one JSON line on stdout. Progress goes to stderr; stdout carries only that line.
import { QUICK, REPS, WARMUP_REPS } from './config.js';
import { median } from './stats.js';

/** 'ops/s': operations that are not requests (a file replaced), per second. */
export type Unit = 'req/s' | 'ops/s' | 'µs' | 'ms' | 'MB';

export interface Quantity {
  median: number;
  samples: number[];
}

export interface Row {
  /** The key bench/targets.ts uses. */
  id: string;
  measurement: string;
  unit: Unit;
  ours: Quantity;
  ceilingLabel?: string;
  ceiling?: Quantity;
  /** ours / ceiling, per repetition. */
  ratio?: Quantity;
}

export interface ServerMemory {
  server: string;
  /** VmRSS after the run. */
  rssMB: number;
  /** VmHWM: the peak resident set during the run. */
  hwmMB: number;
  /** VmRSS once started and set up, before any load: tells growth from the baseline. */
  startRssMB?: number;
}

export interface BenchResult {
  bench: string;
  quick: boolean;
  reps: number;
  seconds: number;
  rows: Row[];
  memory: ServerMemory[];
  notes: string[];
}

export type Recorder = (key: string, value: number) => void;

export interface Step {
  name: string;
  run(record: Recorder): Promise<void>;
}

/** Samples by key, one per repetition, in repetition order. */
export class Samples {
  private readonly byKey = new Map<string, number[]>();

  add(key: string, value: number): void {
    if (!Number.isFinite(value)) throw new Error(`sample ${key} is ${value}`);
    const xs = this.byKey.get(key) ?? [];
    xs.push(value);
    this.byKey.set(key, xs);
  }

  get(key: string): number[] {
    const xs = this.byKey.get(key);
    if (!xs) throw new Error(`no samples for ${key}`);
    return xs;
  }
}

export const progress = (bench: string, message: string): void => void process.stderr.write(`[${bench}] ${message}\n`);

export interface RepeatOptions {
  /** Runs first in every repetition, never reordered (a restart, then cold first calls). */
  setup?: Step;
  /** Runs after every repetition, untimed (resets that keep repetitions alike). */
  reset?: () => Promise<void>;
}

/**
 * Runs every step once per repetition (after WARMUP_REPS discarded ones), reversing the step
 * order on odd repetitions so neither side of a pair always runs first.
 */
export async function repeat(bench: string, steps: readonly Step[], options: RepeatOptions = {}): Promise<Samples> {
  const samples = new Samples();
  for (let rep = -WARMUP_REPS; rep < REPS; rep++) {
    const order = rep % 2 === 0 ? steps : [...steps].reverse();
    for (const step of options.setup ? [options.setup, ...order] : order) {
      const recorded: string[] = [];
      await step.run((key, value) => {
        recorded.push(`${key}=${value.toFixed(value < 10 ? 2 : 0)}`);
        if (rep >= 0) samples.add(key, value);
      });
      progress(bench, `${rep < 0 ? 'warm-up' : `rep ${rep + 1}/${REPS}`} ${step.name}: ${recorded.join(' ')}`);
    }
    await options.reset?.();
  }
  return samples;
}

export interface RowSpec {
  id: string;
  measurement: string;
  unit: Unit;
  /** Sample key of our measurement. */
  ours: string;
  /** Sample key of the ceiling it is paired with, and what that ceiling is. */
  ceiling?: string;
  ceilingLabel?: string;
}

/** Rows from samples: medians of each side, and the median of the per-repetition ratios. */
export function toRows(samples: Samples, specs: readonly RowSpec[]): Row[] {
  return specs.map((s) => {
    const ours = samples.get(s.ours);
    const row: Row = { id: s.id, measurement: s.measurement, unit: s.unit, ours: { median: median(ours), samples: ours } };
    if (s.ceiling) {
      const ceiling = samples.get(s.ceiling);
      const ratios = ours.map((o, i) => o / (ceiling[i] as number));
      row.ceilingLabel = s.ceilingLabel;
      row.ceiling = { median: median(ceiling), samples: ceiling };
      row.ratio = { median: median(ratios), samples: ratios };
    }
    return row;
  });
}

/** Prints the bench's one result line; `seconds` is the bench process's whole run. */
export function emit(result: Omit<BenchResult, 'quick' | 'reps' | 'seconds'>): void {
  const full: BenchResult = { ...result, seconds: process.uptime(), quick: QUICK, reps: REPS };
  process.stdout.write(`${JSON.stringify(full)}\n`);
}
