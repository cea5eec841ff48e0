// Rounds of appends against servers side by side, for the diagnostic benches that compare builds
// (bench/bounds.ts, bench/append-cpu.ts): each connection appends to its own session `c<k>`, and
// every round measures the rate and the server's CPU per append (the whole process's and its main
// thread's), the builds' order alternating so that each sees the same moment's load.
import { ENTRY, RATE } from './config.js';
import type { Call } from './load.js';
import { eachAwaiting, prime } from './load.js';
import type { Rpc } from './rpc.js';
import type { SocketProc } from './servers.js';
import { cpuSecondsOf } from './servers.js';

export interface AppendSide {
  proc: SocketProc;
  conns: Rpc[];
}

export interface AppendSample {
  rate: number;
  /** Server CPU (utime + stime) per append answered, µs. */
  cpuUs: number;
  /** Its main thread's part, µs. */
  mainUs: number;
}

/** One round: connection k appends to session `c<k>`, awaiting each, for up to RATE's calls. */
export async function appendRound(s: AppendSide): Promise<AppendSample> {
  const calls: Call[] = s.conns.map((rpc, c) => () => rpc.request('transcript/append', { name: `c${c}`, entry: ENTRY }));
  await prime(calls);
  const pid = s.proc.pid;
  const mainStat = `/proc/${pid}/task/${pid}/stat`;
  const cpu0 = s.proc.cpuSeconds();
  const main0 = cpuSecondsOf(mainStat);
  const r = await eachAwaiting(calls, RATE);
  return {
    rate: r.rate,
    cpuUs: ((s.proc.cpuSeconds() - cpu0) * 1e6) / r.count,
    mainUs: ((cpuSecondsOf(mainStat) - main0) * 1e6) / r.count,
  };
}

/**
 * One discarded round per side first (JIT warm-up and the files' first opens land in no sample),
 * then `rounds` rounds, the sides' order reversed every other round; the samples per side.
 */
export async function alternatingRounds<S extends AppendSide>(sides: readonly S[], rounds: number, label: string): Promise<Map<S, AppendSample[]>> {
  for (const s of sides) await appendRound(s);
  const samples = new Map<S, AppendSample[]>(sides.map((s) => [s, []]));
  for (let r = 0; r < rounds; r++) {
    for (const s of r % 2 === 0 ? sides : [...sides].reverse()) (samples.get(s) as AppendSample[]).push(await appendRound(s));
    process.stderr.write(`[${label}] round ${r + 1}/${rounds}\n`);
  }
  return samples;
}
