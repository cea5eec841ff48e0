// watchStateDir's event road, step by step, with the file system and the timers in the test's hands
// (fs.watch, fs.stat and the timers replaced for the length of each test, which runs without a
// turn of the event loop): `rename` events settled into one look, other events not looked at, the
// watcher's `error` a look too, one look at a time however often the poll comes, what each answer
// of the look means, and a closed watch that neither looks nor reports. Each test is synchronous
// and puts the real calls back before it returns, so no other test in the same process (npm test
// runs many in one) ever meets the replaced timers.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import { test, type TestContext } from 'node:test';
import { POLL_MS, SETTLE_MS, watchStateDir } from '../../src/server/state-dir-watch.js';

type StatCallback = (err: NodeJS.ErrnoException | null, st?: { dev: number; ino: number }) => void;
interface Timer {
  fn: () => void;
  ms: number | undefined;
  cleared: boolean;
  unref(): Timer;
}

/** A watch over replaced fs calls and timers; everything it does is recorded for the test. */
function harness(t: TestContext, opts: { watchThrows?: Error; pollMs?: number; untold?: boolean } = {}) {
  const looks: StatCallback[] = [];
  const timeouts: Timer[] = [];
  const intervals: Timer[] = [];
  const watcher = Object.assign(new EventEmitter(), { closes: 0, close: () => void watcher.closes++ });
  let onEvent: ((event: string) => void) | undefined;
  let watchOptions: unknown;
  const timer = (fn: () => void, ms: number | undefined): Timer => {
    const h: Timer = { fn, ms, cleared: false, unref: () => h };
    return h;
  };
  t.mock.method(fs, 'statSync', () => ({ dev: 1, ino: 1 }));
  t.mock.method(fs, 'stat', (_dir: string, cb: StatCallback) => void looks.push(cb));
  t.mock.method(fs, 'watch', (_dir: string, options: unknown, listener: (event: string) => void) => {
    if (opts.watchThrows) throw opts.watchThrows;
    watchOptions = options;
    onEvent = listener;
    return watcher;
  });
  t.mock.method(globalThis, 'setTimeout', (fn: () => void, ms?: number) => {
    const h = timer(fn, ms);
    timeouts.push(h);
    return h;
  });
  t.mock.method(globalThis, 'setInterval', (fn: () => void, ms?: number) => {
    const h = timer(fn, ms);
    intervals.push(h);
    return h;
  });
  const clear = (h: Timer | undefined) => {
    if (h) h.cleared = true;
  };
  t.mock.method(globalThis, 'clearTimeout', clear);
  t.mock.method(globalThis, 'clearInterval', clear);
  const reports: string[] = [];
  const unwatched: unknown[] = [];
  let stillThere = 0;
  const watch = watchStateDir(
    '/the/dir',
    (why) => void reports.push(why),
    (err) => void unwatched.push(err),
    opts.untold ? undefined : () => void stillThere++,
    opts.pollMs,
  );
  const restore = () => t.mock.restoreAll();
  return {
    watch,
    looks,
    timeouts,
    intervals,
    watcher,
    reports,
    unwatched,
    restore,
    get stillThere() {
      return stillThere;
    },
    get watchOptions() {
      return watchOptions;
    },
    event: (e: string) => onEvent!(e),
    /** Runs the poll once. */
    poll: () => intervals[0]!.fn(),
    /** Runs the settle timer set last. */
    settle: () => timeouts.at(-1)!.fn(),
  };
}

const enoent = (code: string) => Object.assign(new Error(code), { code });

test('rename events are settled into one look SETTLE_MS later; other events are not looked at', (t) => {
  const h = harness(t);
  try {
    h.event('change');
    assert.equal(h.timeouts.length, 0, 'a change event schedules no look');
    h.event('rename');
    h.event('rename');
    h.event('rename');
    assert.equal(h.timeouts.length, 1, 'three renames, one settle timer');
    assert.equal(h.timeouts[0]!.ms, SETTLE_MS);
    assert.equal(h.looks.length, 0, 'no look before the timer fires');
    h.timeouts[0]!.fn();
    assert.equal(h.looks.length, 1, 'one look once it fires');
    h.looks[0]!(null, { dev: 1, ino: 1 });
    assert.equal(h.stillThere, 1);
    // The timer ran: the next rename settles again.
    h.event('rename');
    assert.equal(h.timeouts.length, 2, 'a rename after the look schedules another');
    h.timeouts[1]!.fn();
    assert.equal(h.looks.length, 2);
    assert.deepEqual(h.reports, []);
  } finally {
    h.restore();
  }
});

test("the watcher's error (the watch ended with the dir) is a look too", (t) => {
  const h = harness(t);
  try {
    assert.deepEqual(h.watchOptions, { persistent: false }, 'the watch does not hold the process');
    h.watcher.emit('error', new Error('watch ended'));
    assert.equal(h.timeouts.length, 1);
    assert.equal(h.timeouts[0]!.ms, SETTLE_MS);
    h.timeouts[0]!.fn();
    assert.equal(h.looks.length, 1);
    h.looks[0]!(enoent('ENOENT'));
    assert.deepEqual(h.reports, ['the state dir /the/dir was removed']);
  } finally {
    h.restore();
  }
});

test('one look at a time: a poll while a look is under way makes none; the next after its answer does', (t) => {
  const h = harness(t);
  try {
    assert.equal(h.intervals.length, 1);
    assert.equal(h.intervals[0]!.ms, POLL_MS, 'the default poll');
    h.poll();
    h.poll();
    h.event('rename');
    h.settle();
    assert.equal(h.looks.length, 1, 'the look under way is the only one');
    h.looks[0]!(null, { dev: 1, ino: 1 });
    h.poll();
    assert.equal(h.looks.length, 2, 'its answer lets the next look go');
    h.looks[1]!(enoent('EACCES'));
    h.poll();
    assert.equal(h.looks.length, 3, 'a failed look lets the next go too');
    assert.equal(h.stillThere, 1);
    assert.deepEqual(h.reports, [], 'a dir that cannot be looked at for another reason is not reported');
  } finally {
    h.restore();
  }
});

test('what a look finds: ENOENT and ENOTDIR are a removal, another dev or ino a replacement, the same both still there', (t) => {
  const cases: [Parameters<StatCallback>, string[], number][] = [
    [[enoent('ENOENT')], ['the state dir /the/dir was removed'], 0],
    [[enoent('ENOTDIR')], ['the state dir /the/dir was removed'], 0],
    [[enoent('EIO')], [], 0],
    [[null, { dev: 2, ino: 1 }], ['the state dir /the/dir was replaced by another directory'], 0],
    [[null, { dev: 1, ino: 2 }], ['the state dir /the/dir was replaced by another directory'], 0],
    [[null, { dev: 1, ino: 1 }], [], 1],
  ];
  for (const [answer, reports, stillThere] of cases) {
    const h = harness(t, { pollMs: 50 });
    try {
      assert.equal(h.intervals[0]!.ms, 50, 'the poll asked for');
      h.poll();
      h.looks[0]!(...answer);
      assert.deepEqual(h.reports, reports, String(answer[0]?.code ?? JSON.stringify(answer[1])));
      assert.equal(h.stillThere, stillThere);
    } finally {
      h.restore();
    }
  }
});

test('a report closes the watch: poll and settle timer cleared, the watcher closed, no look after, reported once', (t) => {
  const h = harness(t);
  try {
    h.event('rename');
    h.poll();
    h.looks[0]!(enoent('ENOENT'));
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
  } finally {
    h.restore();
  }
});

test('a watch closed while a look is under way reports nothing of its answer', (t) => {
  const h = harness(t);
  try {
    h.poll();
    h.watch.close();
    h.looks[0]!(enoent('ENOENT'));
    assert.deepEqual(h.reports, []);
    assert.equal(h.stillThere, 0);
    const h2 = harness(t);
    h2.poll();
    h2.watch.close();
    h2.looks[0]!(null, { dev: 1, ino: 1 });
    assert.equal(h2.stillThere, 0, 'nor that the dir is still there');
  } finally {
    h.restore();
  }
});

test('without a watch (fs.watch throws) the caller is told, and the poll alone looks', (t) => {
  const why = new Error('ENOSPC: inotify watches');
  const h = harness(t, { watchThrows: why });
  try {
    assert.deepEqual(h.unwatched, [why]);
    h.poll();
    h.looks[0]!(enoent('ENOENT'));
    assert.deepEqual(h.reports, ['the state dir /the/dir was removed']);
    assert.equal(h.intervals[0]!.cleared, true);
  } finally {
    h.restore();
  }
});

test('a watch not asked to tell of each look finds the dir in place quietly', (t) => {
  const h = harness(t, { untold: true });
  try {
    h.poll();
    assert.doesNotThrow(() => h.looks[0]!(null, { dev: 1, ino: 1 }));
    h.poll();
    assert.equal(h.looks.length, 2, 'and looks again');
    assert.deepEqual(h.reports, []);
  } finally {
    h.restore();
  }
});
