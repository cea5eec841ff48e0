// An instance id names the default socket of every later start, so a value that cannot is
// refused when it is set; and a state.json that already holds one (another writer checks
// nothing) is still served, on the default socket without it, with a warning.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { runCli, privateRuntimeDir } from '../helpers/cli.js';
import { openIn, storeError } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

for (const bad of ['a/b', 'x'.repeat(120), '-lead', 'a b', '.hidden', 'x'.repeat(33)]) {
  test(`state/setInstanceID ${JSON.stringify(bad.length > 20 ? `${bad.slice(0, 8)}…(${bad.length})` : bad)} is refused at the call; nothing is written`, async (t) => {
    const dir = tempDir();
    const store = await openIn(dir);
    t.after(() => store.close());
    await assert.rejects(() => store.setInstanceID(bad), storeError('invalid-input', ['instanceID', 'names the default socket']));
    assert.equal(store.getState().instanceID, undefined);
  });
}

test('a valid instance id (32 characters) and clearing it are accepted', async (t) => {
  const store = await openIn(tempDir());
  t.after(() => store.close());
  assert.deepEqual(await store.setInstanceID('A1_b.c-' + 'x'.repeat(25)), { changed: true });
  assert.deepEqual(await store.setInstanceID(''), { changed: true });
});

for (const bad of ['a/b', 'x'.repeat(120)]) {
  test(`a state.json holding instanceID ${bad.length > 20 ? `of ${bad.length} characters` : JSON.stringify(bad)} is served (stdio and the default socket), with a warning`, { timeout: 30_000 }, async (t) => {
    const dir = tempDir();
    writeFileSync(statePathIn(dir), JSON.stringify({ home: { id: '', type: '' }, instanceID: bad, sessions: null }));
    const warned: string[] = [];
    const store = await openIn(dir, { warn: (m) => warned.push(m) });
    await store.close();
    assert.ok(warned.some((w) => w.includes('cannot name a socket')), warned.join('\n'));
    const server = runCli(t, ['serve', '--stdio', '--state', statePathIn(dir), '--log-level', 'warn'],
      { env: { ...process.env, XDG_RUNTIME_DIR: privateRuntimeDir(), HERRSCHER_STATE_SOCKET: undefined }, collectStdout: true });
    server.child.stdin?.write('{"jsonrpc":"2.0","id":1,"method":"session/list"}\n');
    const deadline = Date.now() + 20_000;
    while (!server.stdout().includes('"id":1') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    assert.match(server.stdout(), /"result":\{"sessions":\[\]\}/, server.stderr());
    server.child.stdin?.end();
    assert.deepEqual(await server.exited, { code: 0, signal: null }, server.stderr());
  });
}
