// Hostile callers: asking about many names must not grow the store's memory for ever. It kept one
// Transcript and one Participants object per name ever asked about, row or not (300 000 names:
// +600 MB). Now a name with no row keeps nothing once its call is done, and idle objects beyond
// the bound (cachedNames) are closed, least recently used first; one with work in flight never is.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_CACHED_NAMES } from '../../src/store/name-cache.js';
import { nodeIo, withIo } from '../../src/store/io.js';
import { newSession, openIn, reopen } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

test('reads of 120 names (6 times the bound) that have no session row leave no cached object behind', async (t) => {
  const store = await openIn(tempDir(), { cachedNames: 20 });
  t.after(() => store.close());
  for (let i = 0; i < 120; i++) {
    const name = `ghost-${i}`;
    assert.deepEqual(await store.readTranscript(name, 0), []);
    assert.deepEqual(await store.readParticipants(name), []);
    await store.transcriptUsage(name);
  }
  assert.deepEqual(store.cachedNames, { transcripts: 0, journals: 0 });
});

test(`sessions beyond the bound keep at most cachedNames objects, and every transcript still reads and appends right (default ${DEFAULT_CACHED_NAMES})`, async (t) => {
  const dir = tempDir();
  let store = await openIn(dir, { cachedNames: 4 });
  t.after(() => store.close());
  const names = Array.from({ length: 8 }, (_, i) => `s${i}`);
  for (const name of names) await store.addSession(newSession(name));
  for (let round = 0; round < 3; round++) {
    for (const name of names) {
      assert.equal(await store.appendTranscript(name, { ts: `${name}-${round}`, role: 'user', text: 'x', cost: 1 }), round);
      assert.equal(await store.appendParticipant(name, `u${round}`), true);
      assert.ok(store.cachedNames.transcripts <= 4 && store.cachedNames.journals <= 4, JSON.stringify(store.cachedNames));
    }
  }
  const infos = await store.sessionInfos();
  assert.deepEqual(infos.map((i) => [i.session.name, i.usage.entries, i.usage.cost, i.lastTs]), names.map((n) => [n, 3, 3, `${n}-2`]));
  assert.ok(store.cachedNames.transcripts <= 4, JSON.stringify(store.cachedNames));
  for (const name of names) assert.deepEqual(await store.readParticipants(name), ['u0', 'u1', 'u2']);
  store = await reopen(store, { cachedNames: 4 });
  for (const name of names) {
    assert.deepEqual((await store.readTranscript(name, 0)).map((e) => e.ts), [0, 1, 2].map((r) => `${name}-${r}`));
  }
});

test('an object with an append in flight is not evicted; the cache shrinks back to the bound once it is done', async (t) => {
  let release!: () => void;
  const gate = new Promise<void>((r) => { release = r; });
  let held = false;
  const io = withIo({
    async write(fh, buf) {
      if (!held && buf.toString().includes('"slow"')) {
        held = true;
        await gate; // the append of "slow" stays in flight until released
      }
      return nodeIo.write(fh, buf);
    },
  });
  const store = await openIn(tempDir(), { cachedNames: 2, io });
  t.after(() => store.close());
  for (const name of ['slow', 'a', 'b', 'c']) await store.addSession(newSession(name));
  const slow = store.appendTranscript('slow', { ts: 'slow', role: 'user', text: '"slow"' });
  for (const name of ['a', 'b', 'c']) await store.appendTranscript(name, { ts: name, role: 'user', text: 'x' });
  assert.ok(held, 'the slow append is in flight');
  assert.equal(store.cachedNames.transcripts, 2, 'the busy one and the newest idle one');
  release();
  assert.equal(await slow, 0);
  await store.appendTranscript('a', { ts: 'a2', role: 'user', text: 'x' });
  assert.equal(store.cachedNames.transcripts, 2);
  assert.deepEqual((await store.readTranscript('slow', 0)).map((e) => e.ts), ['slow']);
});
