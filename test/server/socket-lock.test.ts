// The shared server's lifetime lock (src/server/socket-lock.ts) alone: its file's name beside the
// socket, one holder at a time (flock: a second open of the file is refused even in this process),
// a release that frees it once and only once, a link at the lock's name refused, the file kept.
import assert from 'node:assert/strict';
import { existsSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { lockSocket, socketLockPath } from '../../src/server/socket-lock.js';
import { tempDir } from '../helpers/temp-dir.js';

test("the lock file is the socket's name with .lock for .sock, absolute", () => {
  const dir = tempDir('hs-socklock-');
  assert.equal(socketLockPath(path.join(dir, 's.sock')), path.join(dir, 's.lock'));
  assert.equal(socketLockPath(path.join(dir, 'plain')), path.join(dir, 'plain.lock'));
  assert.equal(socketLockPath(path.join(dir, 'a.sock.x')), path.join(dir, 'a.sock.x.lock'));
  assert.equal(socketLockPath('rel.sock'), path.resolve('rel.lock'));
});

test('one holder at a time; release frees it once; the file stays', (t) => {
  const socket = path.join(tempDir('hs-socklock-'), 'h.sock');
  const first = lockSocket(socket);
  assert.ok(first, 'a free lock is taken');
  assert.equal(statSync(socketLockPath(socket)).mode & 0o777, 0o600);
  assert.equal(lockSocket(socket), undefined, 'a held lock is refused');
  first.release();
  assert.ok(existsSync(socketLockPath(socket)), 'the file is never removed');
  const second = lockSocket(socket);
  assert.ok(second, 'taken again after the release');
  t.after(() => second.release());
  // The first holder's descriptor number is likely the second's now: a second release must not close it.
  first.release();
  assert.equal(lockSocket(socket), undefined, "a repeated release leaves the next holder's lock alone");
});

test('a link at the lock file is refused, not followed', () => {
  const dir = tempDir('hs-socklock-');
  const socket = path.join(dir, 'l.sock');
  const target = path.join(dir, 'elsewhere');
  writeFileSync(target, '');
  symlinkSync(target, socketLockPath(socket));
  assert.throws(() => lockSocket(socket), /ELOOP/);
});
