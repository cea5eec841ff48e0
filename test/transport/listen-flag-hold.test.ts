// A listen holds the V8 flags set at run time (serve's heap settings) at V8's defaults for the
// net listen call, which loads node's `cluster` and `child_process` modules the first time: so node
// compiles them with its code cache (src/common/v8-flag-hold.ts). Recorded through registered flags
// that log each call, and whether the flags were held while the server bound its socket.
import assert from 'node:assert/strict';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { registerRuntimeV8Flags, v8FlagsHeld } from '../../src/common/v8-flag-hold.js';
import { listenUnixSocket } from '../../src/transport/socket.js';
import { tempDir } from '../helpers/temp-dir.js';

test('the net listen runs with the flags at their defaults, set again right after it', { timeout: 20_000 }, async () => {
  const dir = tempDir();
  const calls: string[] = [];
  registerRuntimeV8Flags({ toDefaults: () => calls.push('defaults'), apply: () => calls.push('apply') });
  const listen = net.Server.prototype.listen;
  net.Server.prototype.listen = function (this: net.Server, ...args: unknown[]) {
    // Only this test's listen (its socket is first bound in a folder inside `dir`).
    if (String(args[0]).startsWith(dir)) calls.push(v8FlagsHeld() ? 'listen, held' : 'listen, not held');
    return (listen as (...a: unknown[]) => net.Server).apply(this, args);
  } as typeof listen;
  try {
    const listener = await listenUnixSocket(path.join(dir, 's.sock'), (s) => s.destroy());
    await listener.close();
    assert.deepEqual(calls, ['defaults', 'listen, held', 'apply']);
    assert.equal(v8FlagsHeld(), false);
  } finally {
    net.Server.prototype.listen = listen;
    registerRuntimeV8Flags(undefined);
  }
});
