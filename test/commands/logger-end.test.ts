// At exit, serve waits for Logging.end(): every line written, in the order logged, a write
// already in flight included. A synchronous flush alone writes what is buffered while an earlier
// asynchronous write is still in flight, so the earlier lines land after the later ones (seen as
// the stop's "stopped" line printed before its "finished" line), or never once the process exits.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { createLogging } from '../../src/commands/logger.js';
import { tempDir } from '../helpers/temp-dir.js';

test('end() resolves once every line is written, in the order logged, big in-flight writes first', { timeout: 30_000 }, async () => {
  // Two rounds: with end() a synchronous flush alone, the first round already fails (6 runs of 6 on
  // a loaded machine); the second is for a machine whose disk took the first big write at once.
  for (let round = 0; round < 2; round++) {
    const file = path.join(tempDir(), 'server.log');
    const logging = createLogging('info', file, 'json');
    const big = 'x'.repeat(4 << 20); // still being written by the thread pool when end() is called
    for (let i = 0; i < 20; i++) logging.log.info({ i, big: i % 5 === 0 ? big : '' }, `line ${i}`);
    logging.log.info('stopped');
    await logging.end();
    const msgs = readFileSync(file, 'utf8').trimEnd().split('\n').map((l) => (JSON.parse(l) as { msg: string }).msg);
    assert.deepEqual(msgs, [...Array.from({ length: 20 }, (_, i) => `line ${i}`), 'stopped'], `round ${round}`);
  }
});
