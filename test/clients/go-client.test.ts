// The Go client's own suite (clients/go: `go vet`, `go test ./...` against the built server)
// runs as part of `npm test`. Without Go on PATH it is skipped with one loud line saying how to
// get it; CI (.ci/run) installs Debian's golang-go first, so there it always runs.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
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

const run = (args: string[], cwd = GO_DIR) =>
  spawnSync(args[0]!, args.slice(1), { cwd, encoding: 'utf8', env: { ...process.env, HERRSCHER_STATE_CLI: CLI }, timeout: 170_000 });

test('the generated Go files are gofmt-clean', { skip: !hasGo && 'no go on PATH' }, () => {
  const r = run(['gofmt', '-l', '.']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, '', `not gofmt-clean:\n${r.stdout}`);
});

test('go vet passes on clients/go', { skip: !hasGo && 'no go on PATH' }, () => {
  const r = run(['go', 'vet', './...']);
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
});

test('go test ./... passes in clients/go against the built server', { skip: !hasGo && 'no go on PATH', timeout: 180_000 }, () => {
  const r = run(['go', 'test', '-count=1', './...']);
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  assert.match(r.stdout, /^ok\s/m);
});
