// A name becomes a file name (transcripts/<name>.jsonl, its metas, participants/<name>.log): every
// method that builds a path from one takes a name of up to 200 bytes of UTF-8 and refuses 201 as
// invalid-name, touching nothing. Bytes, not characters: multi-byte names sit on the limit too.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { openIn, pathMethods, storeError } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

/** Names of exactly `bytes` UTF-8 bytes, made of 1-, 2-, 3- and 4-byte characters. */
function namesOf(bytes: number): string[] {
  const fill = (ch: string): string => {
    const w = Buffer.byteLength(ch);
    return ch.repeat(Math.floor(bytes / w)) + 'a'.repeat(bytes % w);
  };
  const names = ['a', 'é', '€', '😀'].map(fill);
  for (const n of names) assert.equal(Buffer.byteLength(n), bytes);
  return names;
}

const AT_LIMIT = namesOf(200);
const PAST_LIMIT = namesOf(201);

/** A state.json with legacy rows (the session rule caps new names at 64; old rows may be longer). */
function stateWith(names: string[]): string {
  return JSON.stringify({ sessions: names.map((name, i) => ({ name, incarnation: `inc_${String(i).padStart(26, 'A')}` })) });
}

/** Every file under `root` but the store's own bookkeeping, with its bytes. */
function tree(root: string, rel = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(path.join(root, rel))) {
    const r = rel ? `${rel}/${name}` : name;
    if (r === '.herrscher-state') continue;
    if (statSync(path.join(root, r)).isDirectory()) Object.assign(out, { [`${r}/`]: '' }, tree(root, r));
    else out[r] = readFileSync(path.join(root, r)).toString('base64');
  }
  return out;
}

test('every method that builds a path refuses a 201-byte name (invalid-name) and writes nothing', { timeout: 120_000 }, async (t) => {
  const dir = tempDir();
  writeFileSync(statePathIn(dir), stateWith(PAST_LIMIT));
  const store = await openIn(dir);
  t.after(() => store.close());
  const before = tree(dir);
  for (const [method, call] of pathMethods) {
    for (const name of PAST_LIMIT) {
      await assert.rejects(() => call(store, name), storeError('invalid-name', ['must be at most 200 bytes']), `${method} with ${[...name].length} characters`);
    }
  }
  await store.flush();
  assert.deepEqual(tree(dir), before);
});

test('every method that builds a path takes a name of exactly 200 bytes, multi-byte characters too', { timeout: 120_000 }, async (t) => {
  const dir = tempDir();
  writeFileSync(statePathIn(dir), stateWith(AT_LIMIT));
  const store = await openIn(dir);
  t.after(() => store.close());
  // The appends first (so reads and removals find files), the session's removal last.
  for (const [method, call] of pathMethods) {
    for (const name of AT_LIMIT) {
      try {
        await call(store, name);
      } catch (err) {
        assert.fail(`${method} refused a 200-byte name of ${[...name].length} characters: ${(err as Error).message}`);
      }
    }
  }
  await store.flush();
  // The purge removed them again; the appends had made the files under these very names.
  assert.deepEqual(readdirSync(path.join(dir, 'transcripts')), []);
});

test('a 200-byte name\'s transcript and journal are files under that exact name', { timeout: 120_000 }, async (t) => {
  const dir = tempDir();
  writeFileSync(statePathIn(dir), stateWith(AT_LIMIT));
  const store = await openIn(dir);
  t.after(() => store.close());
  for (const name of AT_LIMIT) {
    await store.appendTranscript(name, { ts: 't1', role: 'user', text: 'x' });
    await store.appendParticipant(name, 'u1');
  }
  await store.flush();
  assert.deepEqual(readdirSync(path.join(dir, 'transcripts')).sort(), AT_LIMIT.map((n) => `${n}.jsonl`).sort());
  assert.deepEqual(readdirSync(path.join(dir, 'participants')).sort(), AT_LIMIT.map((n) => `${n}.log`).sort());
});
