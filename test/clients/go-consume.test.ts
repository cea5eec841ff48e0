// How a Go module outside this repository takes the client and the drop-in (docs/install.md, "Go"):
// a `replace` to a folder holding clients/go (a clone, or an unpacked release tarball; here a
// copy of the folder, as the tarball ships it), no go.sum line for it (a replaced folder is not
// checksummed and it needs nothing beyond the standard library), built offline:
// GOPROXY=off, GOFLAGS=-mod=mod, an empty module cache.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { REPO } from '../helpers/cli.js';
import { keptByContent } from '../helpers/derived-cache.js';
import { tempDir } from '../helpers/temp-dir.js';

const hasGo = spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;
if (!hasGo) process.stderr.write('\n!!! SKIPPED the Go consumption test: no `go` on PATH (Debian/Ubuntu: apt-get install golang-go).\n\n');

const MAIN_GO = `package main

import (
	"fmt"

	stateclient "github.com/herrscher/herrscher-state/clients/go"
	"github.com/herrscher/herrscher-state/clients/go/state"
)

func main() {
	fmt.Println(stateclient.ErrNoServer != nil, state.NewState("/nonexistent/state.json") != nil)
}
`;

/**
 * The unpacked release (its `package/clients/go`: every file but the tests), kept between runs by
 * its content: Go's build cache keys a package by its folder as well as its files, so a fresh
 * folder each run compiled both packages again (~1.1 CPU-s of the test's 1.6).
 */
const releaseCopy = (): string =>
  path.join(
    keptByContent('go-release', (dir) => cpSync(path.join(REPO, 'clients/go'), path.join(dir, 'package/clients/go'), { recursive: true, filter: (f) => !f.endsWith('_test.go') })),
    'package/clients/go',
  );

test('a module outside the repository builds against clients/go through a replace, offline', { skip: !hasGo && 'no go on PATH', timeout: 240_000 }, async () => {
  const root = tempDir();
  // As an unpacked release has it: package/clients/go, test files left out as "files" does.
  const release = releaseCopy();
  const mod = path.join(root, 'consumer');
  mkdirSync(mod);
  writeFileSync(
    path.join(mod, 'go.mod'),
    `module example.com/consumer\n\ngo 1.19\n\nrequire github.com/herrscher/herrscher-state/clients/go v0.0.0\n\nreplace github.com/herrscher/herrscher-state/clients/go => ${release}\n`,
  );
  writeFileSync(path.join(mod, 'main.go'), MAIN_GO);
  const env = { ...process.env, GOPROXY: 'off', GOFLAGS: '-mod=mod', GOMODCACHE: path.join(root, 'gomodcache'), GOTOOLCHAIN: 'local' };
  const r = await new Promise<{ err: Error | null; out: string }>((resolve) => {
    execFile('go', ['run', '.'], { cwd: mod, env, encoding: 'utf8', timeout: 230_000 }, (err, stdout, stderr) => resolve({ err, out: `${stdout}${stderr}` }));
  });
  assert.equal(r.err, null, r.out);
  assert.equal(r.out.trim(), 'true true');
  assert.equal(existsSync(path.join(mod, 'go.sum')), false, 'no go.sum is needed for a replaced, dependency-free module');
});
