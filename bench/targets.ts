// The performance targets as data: which row each applies to, the threshold, and whether
// it bounds the ratio (ours / the ceiling measured in the same run) or our value itself. The
// benchmark reports against them; nothing gates on them (no timing assertions in CI). Each ceiling
// is a measured floor of the work itself (the least a server must do, or the system calls it
// cannot avoid), measured in the same run: docs/performance.md, "The targets on their measured
// floors".
export interface Target {
  op: '>=' | '<=';
  value: number;
  /** 'ratio': ours / ceiling; 'ours': our value in the row's unit. */
  on: 'ratio' | 'ours';
  /** The target in words. */
  text: string;
}

export const TARGETS: Readonly<Record<string, Target>> = {
  'append.write.conns.bound': { op: '>=', value: 0.9, on: 'ratio', text: 'non-durable append, 64 connections: ≥ 0.9 × the minimal-store bound build (the least an append must do)' },
  'append.sync.conns': { op: '>=', value: 0.5, on: 'ratio', text: 'durable append, 64 connections on 64 sessions: ≥ 0.5 × non-durable' },
  'append.sync.conns.sqlite': { op: '>=', value: 3, on: 'ratio', text: 'durable append, 64 connections on 64 sessions: ≥ 3 × SQLite FULL' },
  'append.sync.1conn.p50.serial': { op: '<=', value: 1.2, on: 'ratio', text: 'durable append, 1 connection: p50 ≤ 1.2 × a bare echo round trip followed by a raw write + fdatasync' },
  'session.setResumeToken.conns': { op: '>=', value: 5, on: 'ratio', text: 'session/setResumeToken, 64 connections: ≥ 5 × one durable state.json rewrite per call' },
  'session.setResumeToken.5000-sessions': { op: '>=', value: 0.5, on: 'ratio', text: 'session/setResumeToken, 32 connections: the rate at 5 000 sessions ≥ 0.5 × the rate at 10 sessions, same run' },
  'transcript.append.5000-sessions': { op: '>=', value: 0.8, on: 'ratio', text: 'an append costs the same with 5 000 session rows as with 10 (it finds its row by name): durable append rate, 32 connections on 10 transcripts, ≥ 0.8 × with 10 sessions, same run' },
  'transcript.last': { op: '<=', value: 1.2, on: 'ratio', text: '4 MiB vs 4 KiB, transcript/last: ≤ 1.2 ×' },
  'transcript.usage': { op: '<=', value: 1.2, on: 'ratio', text: '4 MiB vs 4 KiB, transcript/usage: ≤ 1.2 ×' },
  'transcript.usage.cold': { op: '<=', value: 2, on: 'ratio', text: 'first transcript/usage after a clean restart, 4 MiB vs 4 KiB: ≤ 2 ×' },
  'transcript.read200': { op: '<=', value: 1.5, on: 'ratio', text: 'transcript/read(200), 4 MiB vs a 256-entry file (both return 200 entries): ≤ 1.5 ×' },
  'session.infos.cold': { op: '<=', value: 2, on: 'ratio', text: 'first session/infos after a clean host restart, 50 × 4 MiB vs 50 × 4 KiB transcripts: ≤ 2 ×' },
  'participants.append.new': { op: '<=', value: 1.2, on: 'ratio', text: 'participants/append, 10 000 vs 10 participants: ≤ 1.2 ×' },
  'go-state.findSession.p50': { op: '<=', value: 2, on: 'ratio', text: 'Go package FindSession p50 ≤ 2 × the in-process slice scan' },
  'go-state.appendTranscript.write.p50.floor': { op: '<=', value: 1.5, on: 'ratio', text: "Go package AppendTranscript (write) p50 ≤ 1.5 × its floor: a Go client round trip to the same server + Go's O_APPEND write of the line" },
  'go-state.setResumeToken.write.p50.floor': { op: '<=', value: 1.5, on: 'ratio', text: "Go package SetResumeToken (write) p50 ≤ 1.5 × its floor: a Go client round trip to the same server + Go's MarshalIndent, temp file, rename" },
  'go-state.loadState.spawn': { op: '<=', value: 1.3, on: 'ratio', text: 'LoadState with no server running, to its first answer, ≤ 1.3 × a bare server spawn on a socket' },
  'shared.first-call': { op: '<=', value: 5, on: 'ours', text: 'a new state costs a call, not a process: connect + initialize(state) + first write on a fresh dir, shared server (write, as the Go drop-in starts it) warm, p50 ≤ 5 ms' },
  'shared.rss.200-states': { op: '<=', value: 150, on: 'ours', text: 'shared server RSS with 200 state files open at once: ≤ 150 MB' },
  'spawn.first-reply': { op: '<=', value: 1.3, on: 'ratio', text: 'spawn to first reply: ≤ 1.3 × the bare server' },
  'feed.stalled.peak-rss': { op: '<=', value: 500, on: 'ours', text: '20 000 appends of 4 KiB with a subscriber that never reads: server peak RSS ≤ 500 MB' },
  'feed.stalled.appends': { op: '>=', value: 0.8, on: 'ratio', text: 'a subscriber that never reads leaves writers unaffected: ≥ 0.8 × the rate without it' },
  'server.rss.load': { op: '<=', value: 150, on: 'ours', text: 'server peak RSS while 64 connections append continuously for 60 s and one subscriber reads slowly: ≤ 150 MB' },
  'server.rss': { op: '<=', value: 150, on: 'ours', text: 'server RSS after the run: ≤ 150 MB' },
};
