// A state.json edited by hand while the server runs, over the wire: the next read answers the
// edit, subscribers are told (a new revision), the server logs it at warn, and the next write
// goes on top of it.
import assert from 'node:assert/strict';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import type { StateDocument } from '../../src/protocol/model.js';
import { StorageHealth } from '../../src/store/health.js';
import { Inbox, TIMEOUT } from '../helpers/feed.js';
import { closeClean, startServer } from '../helpers/server.js';

test('a hand edit of state.json is answered by the next read, announced on the feed, logged at warn, and written on top of', { timeout: TIMEOUT }, async (t) => {
  const srv = await startServer(t);
  const client = await srv.client();
  const watcher = await srv.client('ndjson');
  await client.sessionAdd({ session: { name: 'a' } });
  const inbox = new Inbox(watcher, ['session/didChange', 'state/didChange']);
  const { revision } = await watcher.watchSubscribe({ sessions: true });

  const doc = JSON.parse(readFileSync(srv.state, 'utf8')) as StateDocument;
  const row = doc.sessions?.[0];
  assert.ok(row);
  doc.sessions = [{ ...row, resumeToken: 'by-hand' }];
  doc.workspace = '/by-hand';
  writeFileSync(`${srv.state}.edit`, JSON.stringify(doc, null, 2));
  renameSync(`${srv.state}.edit`, srv.state);

  assert.equal((await client.sessionFind({ name: 'a' })).session?.resumeToken, 'by-hand');
  const got = await client.stateGet();
  assert.equal(got.revision, revision + 1);
  assert.equal(got.state.workspace, '/by-hand');
  const changed = await inbox.waitFor((n) => n.method === 'session/didChange' && n.params.revision === revision + 1);
  assert.equal(changed.params.name, 'a');
  const fields = await inbox.waitFor((n) => n.method === 'state/didChange' && n.params.revision === revision + 1);
  assert.deepEqual(fields.params.fields, ['workspace']);
  assert.equal(srv.logs.filter((l) => l.level === 40 && /changed by another process/.test(l.msg ?? '')).length, 1);

  await client.sessionSetArchived({ name: 'a', archived: true });
  const after = JSON.parse(readFileSync(srv.state, 'utf8')) as StateDocument;
  assert.equal(after.workspace, '/by-hand');
  assert.equal(after.sessions?.[0]?.resumeToken, 'by-hand');
  assert.equal(after.sessions?.[0]?.archived, true);
  await closeClean(srv, 50);
});

/** A health as `status` sees it a minute and a second later: an error recorded now is no longer recent. */
class MinuteLater extends StorageHealth {
  override snapshot(now = Date.now()): ReturnType<StorageHealth['snapshot']> {
    return super.snapshot(now + 61_000);
  }
}

test('a state.json broken by hand: status is unhealthy and a read of what the file holds refused from the first look until the file is fixed, not for a minute', { timeout: TIMEOUT }, async (t) => {
  const srv = await startServer(t, { store: { health: new MinuteLater() } });
  const client = await srv.client();
  await client.sessionAdd({ session: { name: 'a' } });
  assert.equal((await client.status()).healthy, true);
  const good = readFileSync(srv.state);
  writeFileSync(srv.state, '{"sessions": [');
  // Nothing read the file since: status itself looks (as a read of the document does).
  const broken = await client.status();
  assert.equal(broken.healthy, false, 'status said healthy while every write is refused');
  assert.match(broken.lastStorageError?.message ?? '', /cannot be loaded/);
  await assert.rejects(client.sessionSetArchived({ name: 'a', archived: true }), /cannot be loaded/);
  // What state.json holds (what Go's LoadState reads) is not the last good document: a loader
  // hears why, as Go's LoadState would; the overlaid read keeps answering the last good one.
  await assert.rejects(client.stateGet({ persisted: true }), (err: Error & { code?: number }) => err.code === -32020 && /cannot be loaded/.test(err.message));
  assert.equal((await client.stateGet()).state.sessions?.[0]?.name, 'a');
  assert.equal((await client.status()).healthy, false, 'still refused, so still unhealthy');
  writeFileSync(`${srv.state}.edit`, good);
  renameSync(`${srv.state}.edit`, srv.state);
  assert.equal((await client.status()).healthy, true, 'fixed: healthy again');
  assert.equal((await client.stateGet({ persisted: true })).state.sessions?.[0]?.name, 'a');
  assert.deepEqual(await client.sessionSetArchived({ name: 'a', archived: true }), { found: true, changed: true });
});
