// How a Go module outside this repository takes the client and the drop-in (docs/install.md, "Go"):
// a `replace` to a folder holding clients/go (a clone, or an unpacked release tarball; here a
// copy of the folder, as the tarball ships it), no go.sum line for it (a replaced folder is not
// checksummed and it needs nothing beyond the standard library), built offline:
// GOPROXY=off, GOFLAGS=-mod=mod, an empty module cache.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { REPO } from '../helpers/cli.js';
import { GO_RELEASE_COPIES } from '../helpers/derived-cache.js';
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

/** What a release ships of clients/go: every file but the tests. */
const shipped = (f: string): boolean => !f.endsWith('_test.go');

/** A hash of clients/go as shipped: each file's path and bytes. */
function shippedHash(): string {
  const h = createHash('sha256');
  const walk = (rel: string): void => {
    for (const name of readdirSync(path.join(REPO, 'clients/go', rel)).sort()) {
      const r = path.join(rel, name);
      const abs = path.join(REPO, 'clients/go', r);
      if (statSync(abs).isDirectory()) walk(r);
      else if (shipped(name)) h.update(`${r}\0${statSync(abs).mode}\0`).update(readFileSync(abs)).update('\0');
    }
  };
  walk('.');
  return h.digest('hex').slice(0, 16);
}

/**
 * The unpacked release (its `package/clients/go`), in a folder named after what it holds and kept
 * between runs: Go's build cache keys a package by its folder as well as its files, so a fresh
 * folder each run compiled both packages again (~1.1 CPU-s of 1.5). Copied under a temporary
 * name and renamed into place, never written after, so a run never sees half a copy and two
 * runs at once share it; each use touches it, and copies unused for an hour are removed.
 */
function releaseCopy(): string {
  const hash = shippedHash();
  const final = path.join(GO_RELEASE_COPIES, hash);
  if (!existsSync(final)) {
    mkdirSync(GO_RELEASE_COPIES, { recursive: true, mode: 0o700 });
    const tmp = mkdtempSync(path.join(GO_RELEASE_COPIES, 'tmp-'));
    cpSync(path.join(REPO, 'clients/go'), path.join(tmp, 'package/clients/go'), { recursive: true, filter: shipped });
    try {
      renameSync(tmp, final);
    } catch (err) {
      // Another run put the same copy there first.
      rmSync(tmp, { recursive: true, force: true });
      if (!existsSync(final)) throw err;
    }
  }
  const now = new Date();
  utimesSync(final, now, now);
  for (const name of readdirSync(GO_RELEASE_COPIES)) {
    const other = path.join(GO_RELEASE_COPIES, name);
    const unused = (): boolean => {
      try {
        return Date.now() - statSync(other).mtimeMs > 3_600_000;
      } catch {
        return false; // removed meanwhile by another run
      }
    };
    if (name !== hash && unused()) rmSync(other, { recursive: true, force: true });
  }
  return path.join(final, 'package/clients/go');
}

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
