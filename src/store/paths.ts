// Where each file of a state dir lives, and the one guard that keeps every derived path inside it.
import path from 'node:path';
import { SESSION_NAME_PATTERN } from '../protocol/model.js';
import { StoreError } from './store-error.js';

/**
 * Refuses a name that is not one safe path component, so no method can reach outside the state
 * dir. Unlike Go's TranscriptPath, which `filepath.Join`s `..` away.
 */
export function assertPathComponent(name: string): void {
  const bad = pathComponentProblem(name);
  if (bad) throw new StoreError('invalid-name', `name ${JSON.stringify(name)} ${bad}`);
}

/** Whether `name` passes assertPathComponent (for listings that skip, rather than refuse, a legacy name). */
export const isPathComponent = (name: string): boolean => pathComponentProblem(name) === undefined;

function pathComponentProblem(name: string): string | undefined {
  return name === '' ? 'must not be empty'
    : name === '.' || name === '..' ? 'must not be . or ..'
    : /[/\\]/.test(name) ? 'must be one path component (no / or \\)'
    : name.includes('\0') ? 'must not contain NUL'
    // A lone surrogate has no UTF-8 form: the file name would get U+FFFD, the name of another session.
    : !name.isWellFormed() ? 'must not contain a lone surrogate (it would name the file of its U+FFFD twin)'
    : Buffer.byteLength(name) > 200 ? 'must be at most 200 bytes'
    : undefined;
}

/** Herrscher's rule for new sessions (manager/validate.go); legacy rows are never re-validated. */
export function assertSessionName(name: string): void {
  if (!SESSION_NAME_PATTERN.test(name)) {
    throw new StoreError(
      'invalid-name',
      `name ${JSON.stringify(name)} must match ${SESSION_NAME_PATTERN.source} (letters, digits, - or _, max 64)`,
    );
  }
}

export interface StatePaths {
  readonly statePath: string;
  readonly dir: string;
  /**
   * `<dir>/.<base>.lock`, Herrscher's daemon lock (core/host/lock.go): never created nor taken by
   * the store, only adopted when a host hands it over (`serve --lock-fd`).
   */
  readonly lockPath: string;
  /** The folder of this state file's own side files (write-ahead log, marks, metas), relative to dir. */
  readonly side: string;
  /** `<side>/server.lock`: the single-writer lock, held by the one store serving this state file. */
  readonly serverLockPath: string;
}

/** Where every side file of the state file `state.json` lives, and did for every state file before. */
export const LEGACY_SIDE = '.herrscher-state';
const DEFAULT_BASE = 'state.json';

/**
 * The side-file folder of the state file named `base`: `.herrscher-state/` for `state.json` (the
 * layout every existing dir has), `.herrscher-state/<base>.d/` for any other, so two state files
 * in one folder never share a log, a mark or a meta. (`.d` keeps it apart from the folder
 * `transcripts/` and from the `<base>.serving.json` records beside it.)
 */
export const sideOf = (base: string): string => (base === DEFAULT_BASE ? LEGACY_SIDE : `${LEGACY_SIDE}/${base}.d`);

export function statePaths(statePath: string): StatePaths {
  const abs = path.resolve(statePath);
  const dir = path.dirname(abs);
  const side = sideOf(path.basename(abs));
  return {
    statePath: abs, dir, lockPath: path.join(dir, `.${path.basename(abs)}.lock`),
    side, serverLockPath: path.join(dir, side, 'server.lock'),
  };
}

export const transcriptRel = (name: string): string => `transcripts/${name}.jsonl`;
export const participantsRel = (name: string): string => `participants/${name}.log`;
