// The Python client's own tests (clients/python/test_herrscher_state.py and test_shared_socket.py,
// unittest against the built server) run as part of `npm test`.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { CLI, REPO } from '../helpers/cli.js';

test('the Python client passes its tests against the built server', { timeout: 120_000 }, async () => {
  // Async, not spawnSync: npm test shares this process between test files.
  const r = await new Promise<{ err: Error | null; stdout: string; stderr: string }>((resolve) => {
    execFile(
      'python3',
      ['-W', 'error::ResourceWarning', '-m', 'unittest', '-v', 'test_herrscher_state', 'test_shared_socket'],
      { cwd: path.join(REPO, 'clients/python'), encoding: 'utf8', env: { ...process.env, HERRSCHER_STATE_CLI: CLI, PYTHONDONTWRITEBYTECODE: '1' }, timeout: 110_000 },
      (err, stdout, stderr) => resolve({ err, stdout, stderr }),
    );
  });
  assert.equal(r.err, null, `${r.stdout}${r.stderr}`);
  assert.match(r.stderr, /^OK$/m);
});

test('the committed herrscher_state.py carries the sections npm run schema generates', async () => {
  const { ErrorCodes, ErrorDescriptions } = await import('../../src/protocol/errors.js');
  const { openRpcDocument } = await import('../../src/protocol/openrpc.js');
  const { applyPythonSections, pythonSections, snakeName } = await import('../../scripts/python-client-gen.js');
  const file = path.join(REPO, 'clients/python/herrscher_state.py');
  const committed = readFileSync(file, 'utf8');
  assert.equal(applyPythonSections(committed, pythonSections(openRpcDocument('0.0.0'), ErrorCodes, ErrorDescriptions)), committed, 'stale: run npm run schema');
  assert.deepEqual(['AddSession', 'SetStatusMessageID', 'LastTranscriptTimestamp'].map(snakeName), ['add_session', 'set_status_message_id', 'last_transcript_timestamp']);
});
