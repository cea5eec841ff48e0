// What a test file leaves for its end: temp dirs to remove, child processes to kill, per-file
// caches to forget. Run once the file's own tests and hooks are done, whether it ran alone
// (`node --test FILE`: a root-level hook) or in a shard process that runs many files one after
// another (test/helpers/shard.ts calls `runFileEnd` after each). A module-level `after()` in a
// helper would not do: in a shard, a helper module is evaluated once, inside the first file's
// suite, so its hook would run after that file alone and never for the files after it.
import { after } from 'node:test';

const pending: Array<() => void> = [];

/** Runs `fn` when the current test file ends. */
export function atFileEnd(fn: () => void): void {
  pending.push(fn);
}

/**
 * Runs (and forgets) everything registered since the last call, newest first (as Go's t.Cleanup),
 * so a server is killed before its state dir goes; one failure does not skip the rest.
 */
export function runFileEnd(): void {
  const errors: unknown[] = [];
  for (const fn of pending.splice(0).reverse()) {
    try {
      fn();
    } catch (err) {
      errors.push(err);
    }
  }
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) throw new AggregateError(errors, 'cleanups at the end of a test file failed');
}

// Evaluated at the top level of the file (or shard entry) that first imports this module, so
// this hook belongs to the whole process: in a shard it catches what the last file left.
after(runFileEnd);
