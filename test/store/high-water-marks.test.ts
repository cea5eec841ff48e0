// The seq high-water marks on their own (high-water.ts): the last line of defence for "a seq never
// goes back", so every save must reach the disk (synced, its folder synced after the rename), a
// failed save must be tried again, and a damaged file must be said, never half-read.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { crc32 } from 'node:zlib';
import { HIGH_WATER_REL, HighWater, highWaterRelIn } from '../../src/store/high-water.js';
import type { Io } from '../../src/store/io.js';
import { nodeIo, withIo } from '../../src/store/io.js';
import { storeLog } from '../../src/store/store-log.js';
import { errno } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';
import { sealLine } from '../../src/store/sealed-line.js';

const file = (dir: string): string => path.join(dir, HIGH_WATER_REL);
const framed = (json: string): string => sealLine(json);

function recordingIo(dir: string): { io: Io; calls: string[] } {
  const calls: string[] = [];
  const rel = (p: string): string => path.relative(dir, p);
  const io = withIo({
    writeAtomic: async (f, data, opts) => {
      calls.push(`writeAtomic ${rel(f)} sync=${opts.sync} mode=${opts.mode.toString(8)}`);
      return nodeIo.writeAtomic(f, data, opts);
    },
    syncDir: async (d) => {
      calls.push(`syncDir ${rel(d)}`);
      return nodeIo.syncDir(d);
    },
    mkdir: async (d, mode) => {
      calls.push(`mkdir ${rel(d)} ${mode.toString(8)}`);
      return nodeIo.mkdir(d, mode);
    },
  });
  return { io, calls };
}

const silent = storeLog({});

test('a save writes the marks checksummed, synced, in a private file, then fsyncs the folder; no change, no write', async () => {
  const dir = tempDir();
  const { io, calls } = recordingIo(dir);
  const marks = await HighWater.load(io, dir, silent);
  assert.equal(marks.get('s'), 0);
  await marks.save();
  assert.deepEqual(calls, [], 'nothing raised yet: nothing written');
  marks.raise('s', 5);
  marks.raise('s', 3); // never lowers
  marks.raise('t', 0); // 0 is no mark
  await marks.save();
  assert.deepEqual(calls, ['mkdir .herrscher-state 700', 'writeAtomic .herrscher-state/high-water.json sync=true mode=600', 'syncDir .herrscher-state']);
  assert.equal(readFileSync(file(dir), 'utf8'), framed('{"s":5}'));
  calls.length = 0;
  marks.raise('s', 5);
  await marks.save();
  assert.deepEqual(calls, [], 'nothing changed: nothing written');
  marks.reset('nobody');
  await marks.save();
  assert.deepEqual(calls, [], 'forgetting a name never marked changes nothing');
  marks.reset('s');
  await marks.save();
  assert.equal(readFileSync(file(dir), 'utf8'), framed('{}'));
  assert.deepEqual([...(await HighWater.load(nodeIo, dir, silent)).entries()], []);
});

test('the marks read back as written, in another side folder too', async () => {
  const dir = tempDir();
  const rel = highWaterRelIn('.herrscher-state/other.json.d');
  mkdirSync(path.join(dir, '.herrscher-state')); // made by the store's open, as every side folder's parent
  const marks = await HighWater.load(nodeIo, dir, silent, rel);
  marks.raise('a', 7);
  marks.raise('b', 2 ** 40);
  await marks.save();
  const again = await HighWater.load(nodeIo, dir, silent, rel);
  assert.deepEqual(Object.fromEntries(again.entries()), { a: 7, b: 2 ** 40 });
  assert.equal(again.get('a'), 7);
  assert.equal(readFileSync(path.join(dir, '.herrscher-state/other.json.d/high-water.json'), 'utf8'), framed('{"a":7,"b":1099511627776}'));
  assert.equal(existsSync(file(dir)), false, "state.json's own marks file is not touched");
});

test('marks whose checksum has leading zeros are written zero-padded and read back', async () => {
  const dir = tempDir();
  // A name whose marks file's crc32 is below 0x10000000 (one in 16 is): its hex needs padding.
  let name = '';
  for (let i = 0; ; i++) {
    name = `s${i}`;
    if (crc32(JSON.stringify({ [name]: 1 })) < 0x10000000) break;
  }
  const marks = await HighWater.load(nodeIo, dir, silent);
  marks.raise(name, 1);
  await marks.save();
  assert.match(readFileSync(file(dir), 'utf8'), /^0[0-9a-f]{7} /);
  const errors: string[] = [];
  const again = await HighWater.load(nodeIo, dir, storeLog({ error: (m) => errors.push(m) }));
  assert.equal(again.get(name), 1);
  assert.deepEqual(errors, []);
});

test('a failed save is reported with the file and errno, leaves the marks dirty, and the next save writes them', async () => {
  const dir = tempDir();
  let fail = true;
  const io = withIo({
    writeAtomic: async (f, data, opts) => {
      if (fail) throw errno('ENOSPC');
      return nodeIo.writeAtomic(f, data, opts);
    },
  });
  const marks = await HighWater.load(io, dir, silent);
  marks.raise('s', 9);
  await assert.rejects(marks.save(), (err: Error) => err.message === 'write .herrscher-state/high-water.json: ENOSPC: no space left on device');
  fail = false;
  await marks.save();
  assert.equal(readFileSync(file(dir), 'utf8'), framed('{"s":9}'));
});

test('a failed folder fsync fails the save too (the rename may not survive), and the marks stay dirty', async () => {
  const dir = tempDir();
  let fail = true;
  const io = withIo({
    syncDir: async (d) => {
      if (fail) throw errno('EIO', 'fsync');
      return nodeIo.syncDir(d);
    },
  });
  const { io: seen, calls } = recordingIo(dir);
  const marks = await HighWater.load({ ...seen, syncDir: io.syncDir }, dir, silent);
  marks.raise('s', 4);
  await assert.rejects(marks.save(), /EIO/);
  fail = false;
  calls.length = 0;
  await marks.save();
  assert.ok(calls.includes('writeAtomic .herrscher-state/high-water.json sync=true mode=600'), calls.join('\n'));
});

test('saves run one after another: a failed one does not fail the next, each caller hears its own outcome', async () => {
  const dir = tempDir();
  let n = 0;
  const order: string[] = [];
  const io = withIo({
    writeAtomic: async (f, data, opts) => {
      n++;
      const mine = n;
      order.push(`start ${mine}`);
      await new Promise((r) => setTimeout(r, mine === 1 ? 30 : 0));
      order.push(`end ${mine}`);
      if (mine === 1) throw errno('EIO');
      return nodeIo.writeAtomic(f, data, opts);
    },
  });
  const marks = await HighWater.load(io, dir, silent);
  marks.raise('s', 1);
  const first = marks.save();
  marks.raise('s', 2);
  const second = marks.save();
  await assert.rejects(first, /EIO/);
  await second;
  assert.deepEqual(order, ['start 1', 'end 1', 'start 2', 'end 2']);
  assert.equal(readFileSync(file(dir), 'utf8'), framed('{"s":2}'));
});

test('a damaged marks file is logged at error by name and read as no marks; a file that cannot be read is an error', async (t) => {
  const dir = tempDir();
  mkdirSync(path.dirname(file(dir)), { recursive: true });
  const cases: [string, string][] = [
    ['bad checksum', framed('{"s":5}').replace(/^./, (c) => (c === '0' ? '1' : '0'))],
    ['no space after the checksum', framed('{"s":5}').replace(' ', '_')],
    ['checksummed, not JSON', framed('{"s":')],
    ['checksummed array', framed('[5]')],
    ['checksummed null', framed('null')],
    ['checksummed number', framed('5')],
    ['empty', ''],
  ];
  for (const [what, text] of cases) {
    await t.test(what, async () => {
      writeFileSync(file(dir), text);
      const errors: string[] = [];
      const marks = await HighWater.load(nodeIo, dir, storeLog({ error: (m) => errors.push(m) }));
      assert.deepEqual([...marks.entries()], []);
      assert.equal(errors.length, 1);
      assert.match(errors[0] as string, /^\.herrscher-state\/high-water\.json is damaged/);
    });
  }
  await t.test('values that are no seq are dropped, the rest kept, nothing logged', async () => {
    writeFileSync(file(dir), framed('{"a":3,"b":-1,"c":1.5,"d":"4","e":null,"f":9007199254740992,"g":0}') + '\n\n');
    const errors: string[] = [];
    const marks = await HighWater.load(nodeIo, dir, storeLog({ error: (m) => errors.push(m) }));
    assert.deepEqual(Object.fromEntries(marks.entries()), { a: 3, g: 0 });
    assert.deepEqual(errors, []);
  });
  await t.test('a read error other than a missing file is thrown, naming the file', async () => {
    const io = withIo({ readFile: async () => { throw errno('EACCES', 'open'); } });
    await assert.rejects(HighWater.load(io, dir, silent), (err: Error) => err.message === 'read .herrscher-state/high-water.json: EACCES: permission denied');
  });
});
