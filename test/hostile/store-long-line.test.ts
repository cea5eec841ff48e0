// Hostile files: one very long transcript entry is read back in time linear in its size. The
// backward block reader used to re-copy and re-scan the partial line for every 64 KiB block it
// added (40 MB: 17–48 s). No wall-clock assertion: the test's timeout is 20x what a linear read
// needs on a loaded machine and far below what the quadratic one took.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { nodeIo } from '../../src/store/io.js';
import { readNewest } from '../../src/store/transcript-read.js';
import { tempDir } from '../helpers/temp-dir.js';

const MB = 1024 * 1024;

test('one 40 MB entry between short ones is read back whole, in linear time', { timeout: 15_000 }, async () => {
  const file = path.join(tempDir(), 't.jsonl');
  const big = 'x'.repeat(40 * MB);
  writeFileSync(file, [
    '{"ts":"t0","role":"user","text":"before"}',
    JSON.stringify({ ts: 't1', role: 'assistant', text: big }),
    '{"ts":"t2","role":"user","text":"after"}',
    '',
  ].join('\n'));
  const got = await readNewest(nodeIo, file, { limit: 0 });
  assert.deepEqual(got.map((e) => e.ts), ['t0', 't1', 't2']);
  assert.equal(got[1]?.text.length, big.length);
  const newestTwo = await readNewest(nodeIo, file, { limit: 2 });
  assert.deepEqual(newestTwo.map((e) => e.ts), ['t1', 't2']);
});
