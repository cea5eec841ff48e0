// --timeout and $HERRSCHER_STATE_REPLY_TIMEOUT_MS as the client commands read them: a bound
// longer than a Node timer can hold is held to the longest one (a longer timer fires after 1 ms,
// so a generous bound failed every request at once), and a value that is no number is refused.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientOptions } from '../../src/commands/client-options.js';
import { UsageError } from '../../src/commands/command.js';
import { MAX_TIMEOUT_MS, replyTimeoutMs } from '../../src/commands/reply-timeout.js';

test('a --timeout past what a timer can wait is held to the longest wait, not to 1 ms', () => {
  for (const big of ['1e99', String(MAX_TIMEOUT_MS + 1), '3000000000']) {
    const o = clientOptions({ framing: 'lsp', timeout: big });
    assert.equal(o.timeoutMs, MAX_TIMEOUT_MS, big);
    assert.equal(o.givenTimeoutMs, MAX_TIMEOUT_MS, big);
  }
  assert.equal(clientOptions({ framing: 'lsp', timeout: '1500' }).timeoutMs, 1500);
});

test('an empty --timeout is refused as no number, not taken as 0', () => {
  for (const bad of ['', ' ', 'abc', '-1', 'Infinity']) {
    assert.throws(() => clientOptions({ framing: 'lsp', timeout: bad }), (err: unknown) => err instanceof UsageError && /--timeout must be a number/.test(err.message), JSON.stringify(bad));
  }
});

test('$HERRSCHER_STATE_REPLY_TIMEOUT_MS past what a timer can wait is held to the longest wait', () => {
  assert.equal(replyTimeoutMs({ HERRSCHER_STATE_REPLY_TIMEOUT_MS: '1e12' }), MAX_TIMEOUT_MS);
  assert.equal(replyTimeoutMs({ HERRSCHER_STATE_REPLY_TIMEOUT_MS: '2500' }), 2500);
});
