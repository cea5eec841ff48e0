// CommitHistory (src/server/commit-history.ts) alone: what a commit is recorded as, which commits
// `since` hands back for a returning subscriber's revision, and when it says the kept ones do not
// reach back (then the feed resyncs). The feed's own tests (feed-changes.test.ts) see the same
// through the notifications.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { Session, StateDocument } from '../../src/protocol/model.js';
import { CommitHistory } from '../../src/server/commit-history.js';
import { MAX_REPLAY_REVISIONS, MAX_REPLAY_ROW_CHANGES } from '../../src/server/feed-limits.js';

const row = (name: string, extra: Partial<Session> = {}): Session => ({ name, channelID: '', type: '', cmd: '', ...extra });
const doc = (sessions: Session[] | null, extra: Record<string, unknown> = {}): StateDocument => ({ home: { id: 'h', type: 'category' }, sessions, ...extra }) as StateDocument;
const revisions = (cs: { revision: number }[] | undefined): number[] | undefined => cs?.map((c) => c.revision);

test('since: the commits after the revision seen, up to now; nothing for the revision now; undefined from the future', () => {
  const h = new CommitHistory();
  const d = doc([]);
  for (let r = 1; r <= 3; r++) h.record(r, d, d);
  assert.deepEqual(revisions(h.since(0, 3)), [1, 2, 3]);
  assert.deepEqual(revisions(h.since(1, 3)), [2, 3]);
  assert.deepEqual(revisions(h.since(2, 3)), [3]);
  assert.deepEqual(revisions(h.since(3, 3)), []);
  assert.deepEqual(revisions(h.since(0, 2)), [1, 2], 'none past now');
  assert.equal(h.since(4, 3), undefined, 'ahead of now');
});

test('since: an empty history answers only a subscriber at the revision now', () => {
  const h = new CommitHistory();
  assert.deepEqual(h.since(5, 5), []);
  assert.equal(h.since(4, 5), undefined, 'one commit it does not have');
  assert.equal(h.since(6, 5), undefined);
});

test(`at most ${MAX_REPLAY_REVISIONS} commits are kept: one more and the first is gone`, () => {
  const h = new CommitHistory();
  const d = doc([]);
  for (let r = 1; r <= MAX_REPLAY_REVISIONS; r++) h.record(r, d, d);
  assert.equal(h.since(0, MAX_REPLAY_REVISIONS)?.length, MAX_REPLAY_REVISIONS, 'all kept at the bound');
  h.record(MAX_REPLAY_REVISIONS + 1, d, d);
  assert.equal(h.since(0, MAX_REPLAY_REVISIONS + 1), undefined, 'revision 1 is no longer kept');
  assert.equal(h.since(1, MAX_REPLAY_REVISIONS + 1)?.length, MAX_REPLAY_REVISIONS);
});

test(`a commit of more than ${MAX_REPLAY_ROW_CHANGES} row changes is kept alone, and dropped by the next`, () => {
  const h = new CommitHistory();
  const many = Array.from({ length: MAX_REPLAY_ROW_CHANGES + 1 }, (_, i) => row(`s${i}`));
  const after = doc(many);
  const c = h.record(1, doc([]), after);
  assert.equal(c.rows.length, MAX_REPLAY_ROW_CHANGES + 1);
  assert.deepEqual(revisions(h.since(0, 1)), [1], 'the only commit stays, however many rows');
  h.record(2, after, after);
  assert.equal(h.since(0, 2), undefined, 'over the row bound with two commits: the older goes');
  assert.deepEqual(revisions(h.since(1, 2)), [2]);
});

test('row changes counted exactly: commits summing to the bound are all kept', () => {
  const h = new CommitHistory();
  const half = MAX_REPLAY_ROW_CHANGES / 2;
  const a = doc(Array.from({ length: half }, (_, i) => row(`a${i}`)));
  const b = doc([...(a.sessions ?? []), ...Array.from({ length: half }, (_, i) => row(`b${i}`))]);
  h.record(1, doc([]), a);
  h.record(2, a, b);
  assert.deepEqual(revisions(h.since(0, 2)), [1, 2], `${MAX_REPLAY_ROW_CHANGES} row changes in all: kept`);
  const c = doc([...(b.sessions ?? []), row('one-more')]);
  h.record(3, b, c);
  assert.deepEqual(revisions(h.since(1, 3)), [2, 3], 'one more: the oldest goes');
  assert.equal(h.since(0, 3), undefined);
});

test('record: the fields that differ (not sessions), and the rows by name', () => {
  const h = new CommitHistory();
  const kept = row('kept');
  const before = doc([kept, row('gone'), row('changed')], { statusMessageID: 'm1', workspace: { id: 'w' } });
  const after = doc([kept, row('changed', { cmd: 'x' }), row('new')], { statusMessageID: 'm2', workspace: { id: 'w' }, extra: 1 });
  const c = h.record(7, before, after);
  assert.equal(c.revision, 7);
  assert.deepEqual(c.fields.sort(), ['extra', 'statusMessageID']);
  assert.deepEqual(c.rows.map((r) => `${r.kind} ${r.name}`), ['updated changed', 'added new', 'removed gone']);
  assert.equal(c.rows[0]?.session?.cmd, 'x');
  assert.equal(c.rows[2]?.session, undefined, 'a removed row carries no session');
});

test('"sessions" is listed only when the row events cannot rebuild the rows: null to null is not, a second row before an added one is', () => {
  const h = new CommitHistory();
  assert.deepEqual(h.record(1, doc(null), doc(null)).fields, [], 'no list before or after');
  const a = row('a');
  const second = row('a', { cmd: 'second row of a' });
  const added = row('n');
  const c = h.record(2, doc([a]), doc([a, second, added]));
  assert.deepEqual(c.rows.map((r) => `${r.kind} ${r.name}`), ['added n'], "a name's second row is no row event");
  assert.deepEqual(c.fields, ['sessions'], 'the added row is not where the events would put it');
  assert.deepEqual(h.record(3, doc([a]), doc([a, added])).fields, [], 'an added row at the end follows');
});

test('record: over generated commits (rows replaced in place, moved, added, removed, names shared), the row changes are those of a diff by each name\'s first row', () => {
  // The oracle, written from the rule (FindSession's first row per name), not from the code.
  const firstRows = (rows: readonly Session[]): Map<string, Session> => {
    const m = new Map<string, Session>();
    for (const r of rows) if (!m.has(r.name)) m.set(r.name, r);
    return m;
  };
  const expected = (before: readonly Session[], after: readonly Session[]) => {
    const b = firstRows(before);
    const a = firstRows(after);
    const out: { kind: string; name: string; session?: Session }[] = [];
    for (const [name, r] of a) {
      if (!b.has(name)) out.push({ kind: 'added', name, session: r });
      else if (b.get(name) !== r) out.push({ kind: 'updated', name, session: r });
    }
    for (const name of b.keys()) if (!a.has(name)) out.push({ kind: 'removed', name });
    return out;
  };
  const names = ['a', 'b', 'c', 'd'];
  const edit = fc.oneof(
    fc.nat(20).map((k) => (rows: Session[]) => rows.map((r, i) => (rows.length > 0 && i === k % rows.length ? { ...r, resumeToken: `t${k}` } : r))),
    fc.nat(20).map((k) => (rows: Session[]) => rows.filter((_, i) => i !== k % Math.max(1, rows.length))),
    fc.constantFrom(...names).map((n) => (rows: Session[]) => [...rows, row(n)]),
    fc.tuple(fc.nat(20), fc.nat(20)).map(([x, y]) => (rows: Session[]) => {
      const out = [...rows];
      if (out.length < 2) return out;
      const i = x % out.length;
      const j = y % out.length;
      [out[i], out[j]] = [out[j] as Session, out[i] as Session];
      return out;
    }),
  );
  fc.assert(
    fc.property(fc.array(fc.constantFrom(...names), { maxLength: 8 }), fc.array(edit, { minLength: 1, maxLength: 4 }), (start, edits) => {
      const before = start.map((n) => row(n));
      let after = before;
      for (const e of edits) after = e(after);
      const c = new CommitHistory().record(1, doc(before), doc(after));
      assert.deepEqual(c.rows, expected(before, after));
    }),
    { numRuns: 500 },
  );
});
