// What a package with the Go `state` API needs of the server, over a socket: appends under Go's
// rule (requireSession: false), the whole-document state/save with compare-and-set on the
// revision, state/get's persisted document, and a feed a replica can rebuild the document from.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import type { StateDocument } from '../../src/protocol/model.js';
import { entry, fileEntries, Inbox, journalFile, rpcError, TIMEOUT, transcriptFile } from '../helpers/feed.js';
import { closeClean, startServer } from '../helpers/server.js';
import { statePathIn } from '../helpers/temp-dir.js';

const stateText = (dir: string): string => readFileSync(statePathIn(dir), 'utf8');

test('appends with requireSession false write the files for a name without a row, make no row, and are announced', { timeout: TIMEOUT }, async (t) => {
  const srv = await startServer(t);
  const client = await srv.client();
  const watcher = await srv.client('ndjson');
  const inbox = new Inbox(watcher, ['transcript/didAppend', 'participants/didAdd', 'session/didChange']);
  await watcher.watchSubscribe({ sessions: true, transcripts: '*', participants: '*' });
  await assert.rejects(client.transcriptAppend({ name: 'ghost', entry: entry('refused') }), rpcError(-32011));
  await assert.rejects(client.transcriptAppend({ name: 'ghost', entry: entry('refused'), requireSession: true }), rpcError(-32011));
  assert.deepEqual(await client.transcriptAppend({ name: 'ghost', entry: entry('one'), requireSession: false }), { seq: 0 });
  assert.deepEqual(await client.transcriptAppend({ name: 'ghost', entry: entry('two'), requireSession: false }), { seq: 1 });
  assert.deepEqual(await client.participantsAppend({ name: 'ghost', userId: 'u1', requireSession: false }), { added: true });
  assert.deepEqual(await client.participantsAppend({ name: 'ghost', userId: 'u1', requireSession: false }), { added: false });
  assert.deepEqual(fileEntries(transcriptFile(srv.dir, 'ghost')).map((e) => e.text), ['one', 'two']);
  assert.equal(readFileSync(journalFile(srv.dir, 'ghost'), 'utf8'), 'u1\n');
  assert.deepEqual((await client.sessionList()).sessions, [], 'no row was made');
  assert.equal(existsSync(statePathIn(srv.dir)), false, 'state.json was not written');
  const last = await inbox.waitFor((n) => n.method === 'participants/didAdd');
  assert.equal(last.params.name, 'ghost');
  assert.deepEqual(inbox.of('transcript/didAppend').map((p) => p.seq), [0, 1]);
  assert.equal(inbox.of('session/didChange').length, 0);
  // The name is still checked as a file name, and a guard still speaks of a lifetime.
  await assert.rejects(client.transcriptAppend({ name: '../x', entry: entry('x'), requireSession: false }), rpcError(-32602));
  await assert.rejects(client.participantsAppend({ name: 'ghost', userId: 'u2', requireSession: false, incarnation: 'inc_X' }),
    rpcError(-32050, { incarnation: null }));
  await closeClean(srv, 40);
});

test('state/save replaces the document when the revision is current, and answers -32050 with the revision otherwise', { timeout: TIMEOUT }, async (t) => {
  const srv = await startServer(t);
  const client = await srv.client();
  await client.sessionAdd({ session: { name: 'a', channelID: 'c1' } });
  await client.sessionAdd({ session: { name: 'b', channelID: 'c2' } });
  await client.stateApplyDefaults({ workspace: '/defaults' });
  const got = await client.stateGet({ persisted: true });
  assert.equal(got.state.workspace, undefined, 'the persisted document has no defaults overlay');
  assert.equal((await client.stateGet()).state.workspace, '/defaults', 'the plain one has');
  const doc: StateDocument = { ...got.state, sessions: [...(got.state.sessions ?? [])].reverse(), instanceID: 'alice' };
  const saved = await client.stateSave({ state: doc, revision: got.revision });
  assert.deepEqual(saved, { revision: got.revision + 1, changed: true });
  const file = JSON.parse(stateText(srv.dir)) as StateDocument;
  assert.deepEqual(file.sessions?.map((r) => r.name), ['b', 'a']);
  assert.equal(file.instanceID, 'alice');
  assert.equal(file.workspace, undefined, 'the overlay is never persisted');
  assert.deepEqual((await client.stateGet({ persisted: true })).state, file);

  const before = stateText(srv.dir);
  await assert.rejects(client.stateSave({ state: { ...doc, instanceID: 'bob' }, revision: got.revision }),
    rpcError(-32050, { revision: saved.revision }));
  assert.equal(stateText(srv.dir), before);
  assert.equal((await client.stateGet()).revision, saved.revision);
  await closeClean(srv, 40);
});

test('after a state/save the feed tells a replica what changed, with "sessions" when rows were reordered', { timeout: TIMEOUT }, async (t) => {
  const srv = await startServer(t);
  const client = await srv.client();
  const watcher = await srv.client('ndjson');
  await client.sessionAdd({ session: { name: 'a' } });
  await client.sessionAdd({ session: { name: 'b' } });
  const inbox = new Inbox(watcher, ['session/didChange', 'state/didChange']);
  await watcher.watchSubscribe({ sessions: true });
  const got = await client.stateGet({ persisted: true });
  const [a, b] = got.state.sessions ?? [];
  assert.ok(a && b);
  // One row edited in place: a session/didChange for it, no "sessions".
  const edited = await client.stateSave({ state: { ...got.state, sessions: [{ ...a, dir: '/w' }, b] }, revision: got.revision });
  const changed = await inbox.waitFor((n) => n.method === 'session/didChange' && n.params.revision === edited.revision);
  assert.equal(changed.params.name, 'a');
  assert.equal((changed.params.session as { dir?: string }).dir, '/w');
  // Reordered: state/didChange lists "sessions".
  const now = await client.stateGet({ persisted: true });
  const reordered = await client.stateSave({ state: { ...now.state, sessions: [...(now.state.sessions ?? [])].reverse() }, revision: now.revision });
  const note = await inbox.waitFor((n) => n.method === 'state/didChange' && n.params.revision === reordered.revision);
  assert.deepEqual(note.params.fields, ['sessions']);
  assert.equal(inbox.notes.filter((n) => n.params.revision === edited.revision && n.method === 'state/didChange').length, 0);
  await closeClean(srv, 40);
});
