// The look at the state dir before a write, once per turn of the event loop (state-gone.ts): the
// writes of one turn share one lstat, a removal is noticed by the first write of a later turn,
// and a dir found gone is looked at again by every write.
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { nodeIo, withIo } from '../../src/store/io.js';
import { isStateGone, StateDirWatch } from '../../src/store/state-gone.js';
import { tempDir } from '../helpers/temp-dir.js';

/** A watch on a new dir, its lstats counted, its turns ended by hand (`endTurn`). */
function watched() {
  const dir = path.join(tempDir(), 'state');
  mkdirSync(dir);
  let lstats = 0;
  const io = withIo({ lstatNow: (file) => (lstats++, nodeIo.lstatNow(file)) });
  const turnEnds: (() => void)[] = [];
  const watch = new StateDirWatch(io, dir, statSync(dir), (f) => turnEnds.push(f));
  const endTurn = (): void => {
    for (const f of turnEnds.splice(0)) f();
  };
  return { dir, watch, lstats: () => lstats, endTurn, turnsPending: () => turnEnds.length };
}

test('the writes of one turn share one lstat of the state dir; the next turn looks again', () => {
  const w = watched();
  for (let i = 0; i < 5; i++) w.watch.assertHere('an append');
  assert.equal(w.lstats(), 1);
  assert.equal(w.turnsPending(), 1, 'one end of turn asked for, not one per write');
  w.endTurn();
  w.watch.assertHere('an append');
  w.watch.assertHere('an append');
  assert.equal(w.lstats(), 2);
});

test('a removal is noticed by the first write of the next turn, and a gone dir is looked at by every write', () => {
  const w = watched();
  w.watch.assertHere('an append');
  rmSync(w.dir, { recursive: true });
  // The same turn: ordered before the removal, as a write between its lstat and its write was.
  w.watch.assertHere('an append');
  w.endTurn();
  assert.throws(() => w.watch.assertHere('an append'), (err: unknown) => isStateGone(err) && (err as Error).message.includes('an append refused'));
  assert.throws(() => w.watch.assertHere('a removal'), isStateGone);
  assert.equal(w.lstats(), 3, 'a gone answer is never kept');
});

test('the default end of turn is the event loop\'s: a removal between two turns is noticed', async () => {
  const dir = path.join(tempDir(), 'state');
  mkdirSync(dir);
  const watch = new StateDirWatch(nodeIo, dir, statSync(dir));
  watch.assertHere('an append');
  rmSync(dir, { recursive: true });
  await new Promise((resolve) => setImmediate(resolve));
  assert.throws(() => watch.assertHere('an append'), isStateGone);
  assert.equal(watch.gone, true);
});
