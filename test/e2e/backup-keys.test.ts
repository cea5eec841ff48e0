// End to end over the wire: a client's keyed writes answered by a server, a `backup` of that
// server, a restore into a new dir, a server on it, and the same writes sent again with their
// keys (as a client does whose connection ended before the answer): answered as they were, not
// applied twice.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { restoreBackup } from '../../src/store/restore.js';
import { startServer } from '../helpers/server.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const writer = 'e2e-backup-writer';
const entry = { ts: '2026-01-01T00:00:00Z', role: 'user', text: 'once' };

test('keyed writes answered before a backup and sent again to the restored server are answered as they were, and applied once', async (t) => {
  const srv = await startServer(t);
  const client = await srv.client();
  const added = await client.sessionAdd({ session: { name: 'a' }, writer: { id: writer, seq: 1 } });
  assert.equal((await client.transcriptAppend({ name: 'a', entry, writer: { id: writer, seq: 2 } })).seq, 0);
  const dest = path.join(tempDir(), 'bk');
  await client.backup({ dest });
  await srv.close();

  const target = path.join(tempDir(), 'restored');
  await restoreBackup(dest, statePathIn(target));
  const again = await startServer(t, { dir: target });
  const retry = await again.client();
  assert.deepEqual(await retry.sessionAdd({ session: { name: 'a' }, writer: { id: writer, seq: 1 } }), added, 'session/add sent again: its answer, not -32010');
  assert.equal((await retry.transcriptAppend({ name: 'a', entry, writer: { id: writer, seq: 2 } })).seq, 0, 'transcript/append sent again: its seq');
  assert.deepEqual((await retry.transcriptRead({ name: 'a' })).entries.map((e) => e.text), ['once'], 'written once');
  assert.equal((await retry.transcriptAppend({ name: 'a', entry, writer: { id: writer, seq: 3 } })).seq, 1, 'a new key is applied');
});
