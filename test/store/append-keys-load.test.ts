// AppendKeys.load at a start: a key is kept when its append's bytes are in the file, dropped when
// the file is gone, and a file that cannot be read fails the start (never "not there", which
// would drop the key and let the append's retry land twice).
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { crc32 } from 'node:zlib';
import { AppendKeys } from '../../src/store/append-keys.js';
import { nodeIo, withIo } from '../../src/store/io.js';
import { sealLine } from '../../src/store/sealed-line.js';
import { tempDir } from '../helpers/temp-dir.js';

const entry = '{"ts":"t","role":"user","text":"x"}\n';

function logWithOneKey(dir: string): string {
  mkdirSync(path.join(dir, 'transcripts'));
  const file = path.join(dir, 'transcripts', 'a.jsonl');
  writeFileSync(file, entry);
  const place = { f: 'transcripts/a.jsonl', i: statSync(file).ino, o: 0, n: Buffer.byteLength(entry), c: crc32(Buffer.from(entry)) };
  const log = path.join(dir, 'append-keys.log');
  writeFileSync(log, sealLine(JSON.stringify({ w: 'writer-1', q: 7, a: { seq: 1 }, p: place })));
  return log;
}

test('a key whose bytes are in the file is kept; one whose file is gone is dropped', async (t) => {
  const dir = tempDir();
  const log = logWithOneKey(dir);
  const kept = await AppendKeys.load(nodeIo, dir, log);
  t.after(() => kept.close());
  assert.deepEqual(kept.keys.answered({ id: 'writer-1', seq: 7 }), { answer: { seq: 1 } });

  const other = tempDir();
  const log2 = logWithOneKey(other);
  const gone = await AppendKeys.load(withIo({ open: async (f, flags, mode) => (f.endsWith('a.jsonl') ? Promise.reject(Object.assign(new Error('gone'), { code: 'ENOENT' })) : nodeIo.open(f, flags, mode)) }), other, log2);
  t.after(() => gone.close());
  assert.equal(gone.keys.answered({ id: 'writer-1', seq: 7 }), undefined);
});

test('a transcript that cannot be read at the start fails the start instead of dropping the key', async () => {
  const dir = tempDir();
  const log = logWithOneKey(dir);
  const eio = withIo({ open: async (f, flags, mode) => (f.endsWith('a.jsonl') ? Promise.reject(Object.assign(new Error('i/o'), { code: 'EIO' })) : nodeIo.open(f, flags, mode)) });
  await assert.rejects(AppendKeys.load(eio, dir, log), (err: Error & { code?: string }) => {
    assert.match(err.message, /transcripts\/a\.jsonl/);
    return true;
  });
});
