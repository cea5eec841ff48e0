// The manifest of a backup (`backup-manifest.json` at its root): which revision of which server
// run the copy holds, what compaction's numbering and the seq high-water marks said (the side
// files that name files by inode are not copied: a restore writes them anew for its own files),
// and the size and SHA-256 of every file. Written last, after every file is synced: a backup
// folder without it is incomplete. Read by verify and restore (one definition of the format).
import { APPEND_KEYS_FILE } from './append-keys-log.js';
import { isPathComponent, sideOf } from './paths.js';
import { STATE_KEYS_FILE } from './state-keys.js';
import { WRITERS_FILE } from './writer-sequences.js';

export const MANIFEST_NAME = 'backup-manifest.json';
/**
 * Created first in a backup folder and renamed to MANIFEST_NAME last, with the manifest in it: a
 * folder that holds it and no manifest is a backup whose writer stopped (killed, power lost).
 */
export const UNFINISHED_NAME = `.${MANIFEST_NAME}.tmp`;
const FORMAT = 'herrscher-state backup';
/**
 * The manifest format this build writes; it reads this one and every earlier one. Version 2 added
 * `offline` (revision and epoch null then) and the idempotency keys (KEY_FILES).
 */
export const MANIFEST_VERSION = 2;

/**
 * The side folder of a backup's state.json (paths.ts, sideOf), and the side files a backup holds
 * in it: the idempotency keys, written anew from what the store answered (no inode, no stamp), so a
 * write sent again after a restore is answered as it was, not applied twice. `writers` is the
 * previous format of the document's keys: backups of earlier builds hold it instead of `stateKeys`
 * (a restore puts it back as it is, and the start reads it).
 */
export const BACKUP_SIDE = sideOf('state.json');
export const KEY_FILES = {
  writers: `${BACKUP_SIDE}/${WRITERS_FILE}`, stateKeys: `${BACKUP_SIDE}/${STATE_KEYS_FILE}`, appendKeys: `${BACKUP_SIDE}/${APPEND_KEYS_FILE}`,
} as const;

export interface ManifestFile {
  size: number;
  sha256: string;
}

/** What compaction left a transcript: the seq of its file's first entry and the usage of the entries it removed. */
export interface Numbering {
  firstSeq: number;
  /** A usage sum as usage.ts's sumToJson stores it. */
  dropped: Record<string, unknown>;
}

export interface BackupManifest {
  format: typeof FORMAT;
  version: number;
  /**
   * Taken with no server running: the command opened the state itself, so there was no server run
   * whose revision the copy is at (revision and epoch are null). Version 1 manifests: false.
   */
  offline: boolean;
  /** The state revision the copy holds, of the server run `epoch` (the change feed's); null when offline. */
  revision: number | null;
  epoch: string | null;
  /** When the copy was fixed (ISO 8601, UTC). */
  createdAt: string;
  /** The state file copied, absolute. */
  source: string;
  /** Per transcript compaction has cut: how its file is numbered. Others start at seq 0. */
  numbering: Record<string, Numbering>;
  /** The seq high-water mark of each transcript name (high-water.ts). */
  seqMarks: Record<string, number>;
  /** Every file of the backup but the manifest, by path relative to the backup folder. */
  files: Record<string, ManifestFile>;
}

/** The files a backup holds: state.json, transcripts/<name>.jsonl, participants/<name>.log (and KEY_FILES). */
const BACKUP_FILE = /^(?:state\.json|transcripts\/(.+)\.jsonl|participants\/(.+)\.log)$/s;

/** Whether `rel` is a path a backup may hold (a name that is one safe path component: no way out of the folder). */
export function isBackupFile(rel: string): boolean {
  if ((Object.values(KEY_FILES) as string[]).includes(rel)) return true;
  const m = BACKUP_FILE.exec(rel);
  if (!m) return false;
  const name = m[1] ?? m[2];
  return name === undefined || isPathComponent(name);
}

/** Where a backup stands, for the commands' lines: `at revision 17 (epoch …)`, or when it was taken offline. */
export const describeBackup = (b: { revision: number | null; epoch: string | null; createdAt: string }): string =>
  b.revision === null ? `taken offline at ${b.createdAt} (no server was running, so no revision)` : `at revision ${b.revision} (epoch ${b.epoch})`;

export function encodeManifest(m: Omit<BackupManifest, 'format' | 'version'>): string {
  const sorted = (o: Record<string, unknown>): Record<string, unknown> => Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const out: BackupManifest = {
    format: FORMAT, version: MANIFEST_VERSION, offline: m.offline, revision: m.revision, epoch: m.epoch, createdAt: m.createdAt, source: m.source,
    numbering: sorted(m.numbering) as BackupManifest['numbering'],
    seqMarks: sorted(m.seqMarks) as BackupManifest['seqMarks'],
    files: sorted(m.files) as BackupManifest['files'],
  };
  return `${JSON.stringify(out, null, 2)}\n`;
}

const isCount = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The manifest in `text`, or why it is not one this build can use. */
export function parseManifest(text: string): { manifest: BackupManifest } | { problem: string } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    return { problem: `not JSON (${(err as Error).message})` };
  }
  if (!isObject(v) || v.format !== FORMAT) return { problem: `not a herrscher-state backup manifest (no "format": "${FORMAT}")` };
  if (!isCount(v.version) || v.version < 1) return { problem: 'its "version" is not a whole number ≥ 1' };
  if (v.version > MANIFEST_VERSION) {
    return { problem: `written in manifest version ${v.version} by a newer herrscher-state; this build reads versions up to ${MANIFEST_VERSION}: use the newer build` };
  }
  if (v.version === 1) v.offline = false; // version 1 was always written with a revision
  if (typeof v.offline !== 'boolean') return { problem: '"offline" is missing or not true or false' };
  if (v.offline ? v.revision !== null || v.epoch !== null : !isCount(v.revision) || typeof v.epoch !== 'string') {
    return { problem: v.offline ? 'an offline backup has no revision and epoch (null), yet this one names them' : 'revision or epoch is missing or of the wrong type' };
  }
  if (typeof v.createdAt !== 'string' || typeof v.source !== 'string') return { problem: 'createdAt or source is missing or of the wrong type' };
  if (!isObject(v.files) || !isObject(v.numbering) || !isObject(v.seqMarks)) return { problem: 'files, numbering or seqMarks is not an object' };
  for (const [rel, f] of Object.entries(v.files)) {
    if (!isBackupFile(rel)) return { problem: `lists ${JSON.stringify(rel)}, which is not a file a backup holds` };
    if (!isObject(f) || !isCount(f.size) || typeof f.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(f.sha256)) {
      return { problem: `the entry of ${rel} has no size and sha256` };
    }
  }
  for (const [name, n] of Object.entries(v.numbering)) {
    if (!isPathComponent(name) || !isObject(n) || !isCount(n.firstSeq) || !isObject(n.dropped)) return { problem: `the numbering of ${JSON.stringify(name)} is malformed` };
  }
  for (const [name, n] of Object.entries(v.seqMarks)) {
    if (!isPathComponent(name) || !isCount(n)) return { problem: `the seq mark of ${JSON.stringify(name)} is malformed` };
  }
  return { manifest: v as unknown as BackupManifest };
}
