// Replay never destroys bytes it did not write. After a machine crash that lost the page cache,
// the Go daemon may append to a transcript before this server starts again: its bytes sit where
// our records belong. They are kept, our entries are appended after them, and an error says so.
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { Store } from '../../src/store/store.js';
import { WAL_REL } from '../../src/store/wal-record.js';
import { newSession } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const entry = (ts: string) => ({ ts, role: 'user', text: ts });
const line = (ts: string) => `{"ts":"${ts}","role":"user","text":"${ts}"}\n`;

/** The first line of every transcript here: a file's first append is durable in the file itself (fdatasynced), so a power loss keeps it. */
const FIRST = line('t0');

/** Appends t0 then `tss` to session `name`, then "crashes" (never closes): the log keeps the records of `tss`. */
async function crashedAfter(dir: string, name: string, tss: string[]): Promise<void> {
  const s = await Store.open(statePathIn(dir), { lock: false });
  await s.addSession(newSession(name));
  for (const ts of ['t0', ...tss]) await s.appendTranscript(name, entry(ts));
}

async function reopened(dir: string): Promise<{ errors: string[] }> {
  const errors: string[] = [];
  const store = await Store.open(statePathIn(dir), { error: (m) => errors.push(m) });
  await store.close();
  return { errors };
}

for (const [what, goLine] of [
  ['shorter than ours', '{"ts":"g","role":"go","text":"g"}\n'],
  ['longer than all of ours', `{"ts":"g","role":"go","text":"${'g'.repeat(400)}"}\n`],
] as const) {
  test(`Go appended first after a power loss (its entry ${what}): its bytes are kept and ours follow them, with one error`, async () => {
    const dir = tempDir();
    await crashedAfter(dir, 's', ['t1', 't2', 't3']);
    const file = path.join(dir, 'transcripts/s.jsonl');
    truncateSync(file, FIRST.length); // the power loss took our unsynced appends
    appendFileSync(file, goLine); // the Go daemon appended before this server started again
    const { errors } = await reopened(dir);
    assert.equal(readFileSync(file, 'utf8'), FIRST + goLine + line('t1') + line('t2') + line('t3'));
    const about = errors.filter((e) => e.includes('transcripts/s.jsonl'));
    assert.equal(about.length, 1, errors.join('\n'));
    assert.match(about[0] as string, /did not write.*re-appended 3 entries/);
    assert.equal(statSync(path.join(dir, WAL_REL)).size, 0);
  });
}

test('Go appended after some of ours survived: the survivors stay in place, the lost ones follow Go\'s entry', async () => {
  const dir = tempDir();
  await crashedAfter(dir, 's', ['t1', 't2', 't3']);
  const file = path.join(dir, 'transcripts/s.jsonl');
  truncateSync(file, FIRST.length + line('t1').length);
  const goLine = '{"ts":"g","role":"go","text":"g"}\n';
  appendFileSync(file, goLine);
  const { errors } = await reopened(dir);
  assert.equal(readFileSync(file, 'utf8'), FIRST + line('t1') + goLine + line('t2') + line('t3'));
  assert.ok(errors.some((e) => /re-appended 2 entries/.test(e)), errors.join('\n'));
});

test('a foreign torn tail (no newline) is kept and our entry starts on a line of its own', async () => {
  const dir = tempDir();
  await crashedAfter(dir, 's', ['t1']);
  const file = path.join(dir, 'transcripts/s.jsonl');
  writeFileSync(file, `${FIRST}{"ts":"g","ro`); // same file, other bytes after ours, torn
  await reopened(dir);
  assert.equal(readFileSync(file, 'utf8'), `${FIRST}{"ts":"g","ro\n${line('t1')}`);
});

test('two identical entries lost behind a foreign one are both put back (later records follow the moved ones)', async () => {
  const dir = tempDir();
  await crashedAfter(dir, 's', ['same', 'same']);
  const file = path.join(dir, 'transcripts/s.jsonl');
  writeFileSync(file, `${FIRST}x\n`); // shorter than one record: the second record's offset lies past it
  await reopened(dir);
  assert.equal(readFileSync(file, 'utf8'), `${FIRST}x\n${line('same')}${line('same')}`);
});

test('a torn copy of our own record is completed in place, with a warning and no error', async () => {
  const dir = tempDir();
  await crashedAfter(dir, 's', ['t1', 't2']);
  const file = path.join(dir, 'transcripts/s.jsonl');
  truncateSync(file, FIRST.length + line('t1').length + 5);
  const { errors } = await reopened(dir);
  assert.equal(readFileSync(file, 'utf8'), FIRST + line('t1') + line('t2'));
  assert.deepEqual(errors, []);
});

test('a legacy session named a..b gets its lost appends back (a name with .. is still one path component)', async () => {
  const dir = tempDir();
  // Legacy rows are never re-validated: write one by hand, then append to it.
  writeFileSync(path.join(dir, 'state.json'), JSON.stringify({ home: { id: '', type: '' }, sessions: [{ name: 'a..b', channelID: '', type: '', cmd: '', id: 's_a..b', incarnation: 'inc_AAAAAAAAAAAAAAAAAAAAAAAAAA' }] }));
  const s = await Store.open(statePathIn(dir), { lock: false });
  for (const ts of ['t0', 't1']) await s.appendTranscript('a..b', entry(ts));
  for (const u of ['u0', 'u1']) await s.appendParticipant('a..b', u);
  const file = path.join(dir, 'transcripts/a..b.jsonl');
  truncateSync(file, FIRST.length);
  truncateSync(path.join(dir, 'participants/a..b.log'), 'u0\n'.length);
  const { errors } = await reopened(dir);
  assert.equal(readFileSync(file, 'utf8'), FIRST + line('t1'));
  assert.equal(readFileSync(path.join(dir, 'participants/a..b.log'), 'utf8'), 'u0\nu1\n');
  assert.deepEqual(errors, []);
});

// Any one path component is a name the store writes (Go's rule, requireSession false, a legacy
// row): one holding a line terminator too. The replay's pattern once matched none of them (a
// regex `.` stops at \n, \r, U+2028 and U+2029), so their acknowledged appends were dropped.
for (const [what, name] of [['\\n', 'a\nb'], ['\\r', 'a\rb'], ['U+2028', 'a\u2028b'], ['U+2029', 'a\u2029b'], ['a newline at the end', 'a\n']] as const) {
  test(`a name holding ${what} gets its lost appends back`, async () => {
    const dir = tempDir();
    const s = await Store.open(statePathIn(dir), { lock: false });
    for (const ts of ['t0', 't1']) await s.appendTranscript(name, entry(ts), { requireSession: false });
    for (const u of ['u0', 'u1']) await s.appendParticipant(name, u, { requireSession: false });
    const file = path.join(dir, 'transcripts', `${name}.jsonl`);
    const journal = path.join(dir, 'participants', `${name}.log`);
    truncateSync(file, FIRST.length); // the crash took the unsynced appends; the log kept them
    truncateSync(journal, 'u0\n'.length);
    const { errors } = await reopened(dir);
    assert.equal(readFileSync(file, 'utf8'), FIRST + line('t1'));
    assert.equal(readFileSync(journal, 'utf8'), 'u0\nu1\n');
    assert.deepEqual(errors, []);
  });
}
