// watchStateDir's event road, step by step, with its file system calls and timers in the test's
// hands (passed to the watch as its `io`; nothing global is replaced, so the other files npm test
// runs in the same process keep the real ones): `rename` events settled into one look, other
// events not looked at, the watcher's `error` a look too, one look at a time however often the
// poll comes, what each answer of the look means, and a closed watch that neither looks nor reports.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import type { DirIdentity, DirWatchIo } from '../../src/server/state-dir-watch.js';
import { POLL_MS, SETTLE_MS, watchStateDir } from '../../src/server/state-dir-watch.js';

type StatCallback = (err: NodeJS.ErrnoException | null, st?: DirIdentity) => void;
interface FakeTimer {
  fn: () => void;
  ms: number;
  cleared: boolean;
  unrefs: number;
  unref(): FakeTimer;
}

/** A watch over fake fs calls and timers; everything it does is recorded for the test. */
function harness(opts: { watchThrows?: Error; pollMs?: number; untold?: boolean } = {}) {
  const looks: { dir: string; answer: StatCallback }[] = [];
  const timeouts: FakeTimer[] = [];
  const intervals: FakeTimer[] = [];
  const watcher = Object.assign(new EventEmitter(), { closes: 0, close: () => void watcher.closes++ });
  let onEvent: ((event: string) => void) | undefined;
  const watched: { dir: string; options: unknown }[] = [];
  const timer = (fn: () => void, ms: number): FakeTimer => {
    const h: FakeTimer = { fn, ms, cleared: false, unrefs: 0, unref: () => (h.unrefs++, h) };
    return h;
  };
  const clear = (h: FakeTimer | undefined) => {
    if (h) h.cleared = true;
  };
  const io: DirWatchIo = {
    statSync: () => ({ dev: 1, ino: 1 }),
    stat: (dir, answer) => void looks.push({ dir, answer: answer as StatCallback }),
    watch: (dir, options, listener) => {
      if (opts.watchThrows) throw opts.watchThrows;
      watched.push({ dir, options });
      onEvent = listener;
      return watcher;
    },
    setTimeout: (fn, ms) => {
      const h = timer(fn, ms);
      timeouts.push(h);
      return h;
    },
    setInterval: (fn, ms) => {
      const h = timer(fn, ms);
      intervals.push(h);
      return h;
    },
    clearTimeout: (h) => clear(h as FakeTimer | undefined),
    clearInterval: (h) => clear(h as FakeTimer),
  };
  const reports: string[] = [];
  const unwatched: unknown[] = [];
  let stillThere = 0;
  const watch = watchStateDir(
    '/the/dir',
    (why) => void reports.push(why),
    (err) => void unwatched.push(err),
    opts.untold ? undefined : () => void stillThere++,
    opts.pollMs,
    io,
  );
  return {
    watch,
    looks,
    timeouts,
    intervals,
    watcher,
    watched,
    reports,
    unwatched,
    get stillThere() {
      return stillThere;
    },
    event: (e: string) => onEvent!(e),
    /** Runs the poll once. */
    poll: () => intervals[0]!.fn(),
    /** Runs the settle timer set last. */
    settle: () => timeouts.at(-1)!.fn(),
  };
}

const failure = (code: string) => Object.assign(new Error(code), { code });

test('rename events are settled into one look SETTLE_MS later; other events are not looked at', () => {
  const h = harness();
  h.event('change');
  assert.equal(h.timeouts.length, 0, 'a change event schedules no look');
  h.event('rename');
  h.event('rename');
  h.event('rename');
  assert.equal(h.timeouts.length, 1, 'three renames, one settle timer');
  assert.equal(h.timeouts[0]!.ms, SETTLE_MS);
  assert.equal(h.timeouts[0]!.unrefs, 1, 'the settle timer does not hold the process');
  assert.equal(h.looks.length, 0, 'no look before the timer fires');
  h.timeouts[0]!.fn();
  assert.deepEqual(h.looks.map((l) => l.dir), ['/the/dir'], 'one look at the dir once it fires');
  h.looks[0]!.answer(null, { dev: 1, ino: 1 });
  assert.equal(h.stillThere, 1);
  // The timer ran: the next rename settles again.
  h.event('rename');
  assert.equal(h.timeouts.length, 2, 'a rename after the look schedules another');
  h.timeouts[1]!.fn();
  assert.equal(h.looks.length, 2);
  assert.deepEqual(h.reports, []);
});

test("the dir is watched without holding the process; the watcher's error (the watch ended with the dir) is a look too", () => {
  const h = harness();
  assert.deepEqual(h.watched, [{ dir: '/the/dir', options: { persistent: false } }]);
  assert.deepEqual(h.unwatched, [], 'the caller is told nothing while the watch works');
  h.watcher.emit('error', new Error('watch ended'));
  assert.equal(h.timeouts.length, 1);
  assert.equal(h.timeouts[0]!.ms, SETTLE_MS);
  h.timeouts[0]!.fn();
  assert.equal(h.looks.length, 1);
  h.looks[0]!.answer(failure('ENOENT'));
  assert.deepEqual(h.reports, ['the state dir /the/dir was removed']);
});

test('one look at a time: a poll while a look is under way makes none; the next after its answer does', () => {
  const h = harness();
  assert.equal(h.intervals.length, 1);
  assert.equal(h.intervals[0]!.ms, POLL_MS, 'the default poll');
  assert.equal(h.intervals[0]!.unrefs, 1, 'the poll does not hold the process');
  h.poll();
  h.poll();
  h.event('rename');
  h.settle();
  assert.equal(h.looks.length, 1, 'the look under way is the only one');
  h.looks[0]!.answer(null, { dev: 1, ino: 1 });
  h.poll();
  assert.equal(h.looks.length, 2, 'its answer lets the next look go');
  h.looks[1]!.answer(failure('EACCES'));
  h.poll();
  assert.equal(h.looks.length, 3, 'a failed look lets the next go too');
  assert.equal(h.stillThere, 1);
  assert.deepEqual(h.reports, [], 'a dir that cannot be looked at for another reason is not reported');
});

test('what a look finds: ENOENT and ENOTDIR are a removal, another dev or ino a replacement, the same both still there', () => {
  const cases: [Parameters<StatCallback>, string[], number][] = [
    [[failure('ENOENT')], ['the state dir /the/dir was removed'], 0],
    [[failure('ENOTDIR')], ['the state dir /the/dir was removed'], 0],
    [[failure('EIO')], [], 0],
    [[null, { dev: 2, ino: 1 }], ['the state dir /the/dir was replaced by another directory'], 0],
    [[null, { dev: 1, ino: 2 }], ['the state dir /the/dir was replaced by another directory'], 0],
    [[null, { dev: 1, ino: 1 }], [], 1],
  ];
  for (const [answer, reports, stillThere] of cases) {
    const h = harness({ pollMs: 50 });
    assert.equal(h.intervals[0]!.ms, 50, 'the poll asked for');
    h.poll();
    h.looks[0]!.answer(...answer);
    assert.deepEqual(h.reports, reports, String(answer[0]?.code ?? JSON.stringify(answer[1])));
    assert.equal(h.stillThere, stillThere);
  }
});

test('a report closes the watch: poll and settle timer cleared, the watcher closed, no look after, reported once', () => {
  const h = harness();
  h.event('rename');
  h.poll();
  h.looks[0]!.answer(failure('ENOENT'));
  assert.equal(h.reports.length, 1);
  assert.equal(h.intervals[0]!.cleared, true, 'the poll is cleared');
  assert.equal(h.timeouts[0]!.cleared, true, 'the pending settle timer is cleared');
  assert.equal(h.watcher.closes, 1, 'the watcher is closed');
  h.poll();
  h.timeouts[0]!.fn();
  assert.equal(h.looks.length, 1, 'a closed watch looks no more');
  h.watch.close();
  assert.equal(h.watcher.closes, 1, 'closing again does nothing');
  assert.equal(h.reports.length, 1);
});

test('a watch closed while a look is under way reports nothing of its answer', () => {
  const h = harness();
  h.poll();
  h.watch.close();
  h.looks[0]!.answer(failure('ENOENT'));
  assert.deepEqual(h.reports, []);
  assert.equal(h.stillThere, 0);
  const h2 = harness();
  h2.poll();
  h2.watch.close();
  h2.looks[0]!.answer(null, { dev: 1, ino: 1 });
  assert.equal(h2.stillThere, 0, 'nor that the dir is still there');
});

test('without a watch (fs.watch throws) the caller is told, and the poll alone looks', () => {
  const why = new Error('ENOSPC: inotify watches');
  const h = harness({ watchThrows: why });
  assert.deepEqual(h.unwatched, [why]);
  h.poll();
  h.looks[0]!.answer(failure('ENOENT'));
  assert.deepEqual(h.reports, ['the state dir /the/dir was removed']);
  assert.equal(h.intervals[0]!.cleared, true);
});

test('a watch not asked to tell of each look finds the dir in place quietly', () => {
  const h = harness({ untold: true });
  h.poll();
  assert.doesNotThrow(() => h.looks[0]!.answer(null, { dev: 1, ino: 1 }));
  h.poll();
  assert.equal(h.looks.length, 2, 'and looks again');
  assert.deepEqual(h.reports, []);
});
