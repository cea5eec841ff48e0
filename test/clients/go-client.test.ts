// The Go client's own suite (clients/go: `go vet`, `go test ./...` against the built server)
// runs as part of `npm test`. Without Go on PATH it is skipped with one loud line saying how to
// get it; CI (.ci/run) installs Debian's golang-go first, so there it always runs.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { CLI, REPO } from '../helpers/cli.js';

const GO_DIR = path.join(REPO, 'clients/go');
const hasGo = spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;
if (!hasGo) {
  process.stderr.write(
    '\n!!! SKIPPED the Go client tests (clients/go: go vet, go test): no `go` on PATH. Install Go >= 1.19 (Debian/Ubuntu: apt-get install golang-go) and run npm test again.\n\n',
  );
}

/** Runs a command without blocking the event loop (npm test shares this process between files). */
const run = (args: string[], cwd = GO_DIR): Promise<{ status: number | null; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    execFile(args[0]!, args.slice(1), { cwd, encoding: 'utf8', env: { ...process.env, HERRSCHER_STATE_CLI: CLI }, timeout: 170_000, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : null;
      resolve({ status: code, stdout, stderr: err && code === null ? `${stderr}${err.message}` : stderr });
    });
  });

test('the generated Go files are gofmt-clean', { skip: !hasGo && 'no go on PATH' }, async () => {
  const r = await run(['gofmt', '-l', '.']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, '', `not gofmt-clean:\n${r.stdout}`);
});

test('go vet passes on clients/go', { skip: !hasGo && 'no go on PATH' }, async () => {
  const r = await run(['go', 'vet', './...']);
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
});

// -vet=off: the test above ran go vet on the same packages with every analyzer (go test's own
// vet runs a subset of them), so vetting again would only cost a second pass per package.
test('go test ./... passes in clients/go against the built server', { skip: !hasGo && 'no go on PATH', timeout: 180_000 }, async () => {
  const r = await run(['go', 'test', '-vet=off', '-count=1', './...']);
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  assert.match(r.stdout, /^ok\s/m);
});
