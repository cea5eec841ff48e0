// addSession asks an index of names, ids and incarnations instead of scanning the rows;
// these pin that it still answers exactly what a scan of the document it is given would, whatever
// order documents are mutated in (copy-on-write: an older document mutated again, as a failed
// write's replay does), and across removals, duplicates in the file and replays.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { test } from 'node:test';
import type { NewSession, Session } from '../../src/protocol/model.js';
import { nodeIo, withIo } from '../../src/store/io.js';
import type { Doc } from '../../src/store/state-document.js';
import { addSession, emptyDocument, findSession, patchSession, removeSession, setTopField } from '../../src/store/state-document.js';
import { SessionIndex } from '../../src/store/session-index.js';
import { StoreError } from '../../src/store/store-error.js';
import { errno, newSession, openIn, reopen, storeError } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const INCARNATION = /^inc_[A-Z2-7]{26}$/;

/** Go's newSessionID written again from the Go package, over a scan of the rows. */
function expectedId(name: string, rows: readonly Session[]): string {
  const taken = new Set(rows.map((r) => r.id ?? ''));
  const base = `s_${name}`;
  if (!taken.has(base)) return base;
  for (let i = 1; ; i++) if (!taken.has(`${base}_${i}`)) return `${base}_${i}`;
}

/** mulberry32: a seeded generator, so a failing sequence can be replayed from its seed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

for (const seed of [1, 2, 3]) {
  test(`random adds, removals and patches on old and new documents answer as a scan of the rows would (seed ${seed})`, () => {
    const rnd = random(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
    // Names whose ids collide: "a" gets s_a, and "a_1" is the base a second "a" would take next.
    const names = ['a', 'a_1', 'b', 'b_1', 'b_2', 'c', 'd', 'e'];
    const history: Doc[] = [emptyDocument()];
    let adds = 0;
    let refusals = 0;
    for (let step = 0; step < 3000; step++) {
      // Mostly the newest document; sometimes an older one, as a replay after a failed write.
      const doc = rnd() < 0.8 ? (history.at(-1) as Doc) : pick(history);
      const rows = doc.sessions ?? [];
      const op = rnd();
      let next = doc;
      if (op < 0.5) {
        const name = pick(names);
        // A caller's id is kept even when another row has it (as Go); some take an id already used.
        const callerId = rnd() < 0.15 ? pick([...rows.map((r) => r.id ?? ''), 's_a', 's_b_1', 's_x']) : undefined;
        const session: NewSession = newSession(name, callerId ? { id: callerId } : {});
        if (rows.some((r) => r.name === name)) {
          assert.throws(() => addSession(doc, session), (err: unknown) =>
            err instanceof StoreError && err.kind === 'exists' && err.message === `session "${name}" already exists`);
          refusals++;
        } else {
          const out = addSession(doc, session);
          const row = out.result.session;
          assert.equal(row.id, callerId ?? expectedId(name, rows), `step ${step}: id of ${name}`);
          assert.match(row.incarnation ?? '', INCARNATION);
          assert.ok(!rows.some((r) => r.incarnation === row.incarnation), `step ${step}: incarnation is fresh`);
          assert.deepEqual(out.doc.sessions, [...rows, row]);
          next = out.doc;
          adds++;
        }
      } else if (op < 0.75) {
        next = removeSession(doc, pick(names)).doc;
      } else if (op < 0.9) {
        next = patchSession(doc, pick(names), { resumeToken: `t${step}` }).doc;
      } else {
        next = setTopField(doc, 'workspace', `/w${step}`).doc; // a new document sharing the rows
      }
      const after = next.sessions ?? [];
      assert.equal(new Set(after.map((r) => r.name)).size, after.length, `step ${step}: names unique`);
      assert.equal(new Set(after.map((r) => r.incarnation)).size, after.length, `step ${step}: incarnations unique`);
      if (next !== doc) history.push(next);
      assertFindsAsAScan([doc, next], names, `step ${step}`);
    }
    assert.ok(adds > 300 && refusals > 300, `both paths taken: ${adds} adds, ${refusals} refusals`);
  });
}

/** findSession answers, for every name, the very row a scan of that document's rows finds first. */
function assertFindsAsAScan(docs: readonly Doc[], names: readonly string[], at: string): void {
  for (const d of docs) {
    for (const name of [...names, 'absent']) {
      assert.equal(findSession(d, name), (d.sessions ?? []).find((r) => r.name === name), `${at}: findSession(${name})`);
    }
  }
}

for (const seed of [4, 5]) {
  test(`a file's rows sharing a name: findSession answers the first row of that name through patches, removals and adds (seed ${seed})`, () => {
    const rnd = random(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
    const names = ['x', 'y', 'z', 'w'];
    const inc = (i: number) => `inc_${String.fromCharCode(65 + (i % 26)).repeat(26)}`;
    // Go keeps rows that share a name : three x, two y, one z.
    const file: Session[] = ['x', 'y', 'x', 'z', 'x', 'y'].map((name, i) => ({ name, id: `s_${name}${i}`, incarnation: inc(i) }) as Session);
    const history: Doc[] = [{ ...emptyDocument(), sessions: file }];
    for (let step = 0; step < 1500; step++) {
      const doc = rnd() < 0.7 ? (history.at(-1) as Doc) : pick(history);
      const op = rnd();
      let next = doc;
      if (op < 0.45) next = patchSession(doc, pick(names), { resumeToken: `t${step}` }).doc;
      else if (op < 0.55) next = removeSession(doc, pick(names)).doc;
      else if (op < 0.7) {
        const name = pick(names);
        if (!(doc.sessions ?? []).some((r) => r.name === name)) next = addSession(doc, newSession(name)).doc;
      } else if (op < 0.8) next = setTopField(doc, 'workspace', `/w${step}`).doc;
      // else: only look again at an older document
      if (next !== doc) history.push(next);
      assertFindsAsAScan([doc, next], names, `step ${step}`);
    }
    assert.ok(history.some((d) => (d.sessions ?? []).filter((r) => r.name === 'x').length > 1), 'shared names were looked up');
  });
}

test('without caller ids, ids stay unique through removals and re-adds, and a re-added name gets its id back (as Go)', () => {
  let doc = emptyDocument();
  for (const name of ['a', 'a_1', 'b']) doc = addSession(doc, newSession(name)).doc;
  doc = removeSession(doc, 'a').doc;
  const again = addSession(doc, newSession('a'));
  assert.equal(again.result.session.id, 's_a');
  doc = again.doc;
  const ids = (doc.sessions ?? []).map((r) => r.id);
  assert.deepEqual(ids, ['s_a_1', 's_b', 's_a']);
});

test('an id two rows of the file share stays taken after one of them is removed', async (t) => {
  const dir = tempDir();
  // Go keeps duplicate non-empty ids found in the file.
  const inc = (c: string) => `inc_${c.repeat(26)}`;
  writeFileSync(statePathIn(dir), JSON.stringify({
    sessions: [{ name: 'p', id: 's_n', incarnation: inc('A') }, { name: 'q', id: 's_n', incarnation: inc('B') }],
  }));
  const store = await openIn(dir);
  t.after(() => store.close());
  assert.deepEqual(await store.removeSession('p'), { removed: true });
  assert.equal((await store.addSession(newSession('n'))).id, 's_n_1', 'q still holds s_n');
  assert.equal((await store.addSession(newSession('p'))).id, 's_p');
});

test('after a failed write, queued adds are re-applied on the committed rows: the failed row\'s name and id are free again', async (t) => {
  const dir = tempDir();
  let failures = 0;
  const io = withIo({
    writeAtomic: (file, data, opts) => (failures-- > 0 ? Promise.reject(errno('ENOSPC')) : nodeIo.writeAtomic(file, data, opts)),
  });
  let store = await openIn(dir, { io });
  t.after(() => store.close());
  await store.addSession(newSession('a'));
  failures = 1;
  // "n" takes the id s_z, so "z", queued behind it, gets s_z_1 on the pending document…
  const failed = assert.rejects(store.addSession(newSession('n', { id: 's_z' })), storeError('io', [], 'ENOSPC'));
  const queued = store.addSession(newSession('z'));
  await failed;
  // …and s_z once "n" is gone: the replay asked the committed rows, not the failed ones.
  assert.equal((await queued).id, 's_z');
  const n = await store.addSession(newSession('n'));
  assert.equal(n.id, 's_n');
  await assert.rejects(store.addSession(newSession('z')), storeError('exists', ['session "z" already exists']));
  store = await reopen(store);
  const rows = store.listSessions();
  assert.deepEqual(rows.map((r) => [r.name, r.id]), [['a', 's_a'], ['z', 's_z'], ['n', 's_n']]);
  assert.equal(new Set(rows.map((r) => r.incarnation)).size, 3);
});

test('an index handed over with one of two rows of a name removed finds the row left', () => {
  const a1 = { name: 'a', id: 's_a1' } as Session;
  const a2 = { name: 'a', id: 's_a2' } as Session;
  const b = { name: 'b', id: 's_b' } as Session;
  for (const [gone, left] of [[a1, a2], [a2, a1]] as const) {
    const rows = [a1, b, a2];
    assert.equal(SessionIndex.of(rows).find('a'), a1);
    const next = rows.filter((r) => r !== gone);
    SessionIndex.handOver(rows, next, [gone], []);
    assert.equal(SessionIndex.of(next).find('a'), left);
    assert.equal(SessionIndex.of(next).find('b'), b);
    assert.equal(SessionIndex.of(rows).find('a'), a1, 'the old array gets its own index again');
  }
});
