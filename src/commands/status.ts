// `herrscher-state status [--json]`: the running server's identity, load and storage health.
// Exit 0 when healthy, 1 when not (a failing checkpoint, a storage error in the last minute, a
// state.json that cannot be loaded, a server stopping after `shutdown`) or
// when no server answers: a host's or a monitor's health check can use the exit code alone.
// With --json, stdout is JSON whatever happened: no answer prints `{"healthy":false,"error":…}`,
// so a monitor that parses stdout never meets an empty document.
import { connect } from '../client/client.js';
import type { FoundSocket } from '../client/client.js';
import { describeSource } from '../transport/discovery.js';
import type { MethodTable } from '../protocol/table.js';
import type * as z from 'zod';
import type { ClientOptions } from './client-options.js';
import { deadline } from './deadline.js';
import { replyTimeoutMs } from './reply-timeout.js';

type Status = z.output<MethodTable['status']['result']>;

export async function status(o: ClientOptions & { json: boolean }): Promise<number> {
  let s: Status;
  let server: FoundSocket | undefined;
  // --timeout bounds the whole check (a supervisor's health check must end); without it, the
  // connect and the reply have their own bounds.
  const limit = o.givenTimeoutMs === undefined ? undefined : deadline(o.givenTimeoutMs);
  const bounded = <T>(p: Promise<T>): Promise<T> => (limit ? Promise.race([p, limit.expired]) : p);
  const connecting = connect({ ...o, callTimeoutMs: replyTimeoutMs() });
  try {
    const client = await bounded(connecting);
    try {
      s = await bounded(client.status());
      server = client.server;
    } finally {
      await client.close();
    }
  } catch (err) {
    // A connection that arrives after the deadline is closed, so that the process can exit.
    void connecting.then((c) => c.close(), () => undefined);
    const message = (err as Error).message;
    if (o.json) process.stdout.write(`${JSON.stringify({ healthy: false, error: message }, null, 2)}\n`);
    process.stderr.write(`herrscher-state status: ${message}\n`);
    return 1;
  } finally {
    limit?.cancel();
  }
  process.stdout.write(o.json ? `${JSON.stringify(s, null, 2)}\n` : formatStatus(s, server));
  return s.healthy ? 0 : 1;
}

/** The human form: one `key: value` line each, the verdict first; `server`: where it was found. */
export function formatStatus(s: Status, server?: FoundSocket): string {
  const err = s.lastStorageError;
  const rows: [string, string][] = [
    ['health', s.healthy ? 'healthy' : s.stopping ? 'STOPPING (shutdown received: writes refused)' : `UNHEALTHY${s.checkpointFailing ? ' (checkpoint failing)' : ' (a storage error in the last minute, or state.json cannot be loaded: see the last storage error)'}`],
    ['pid', String(s.pid)],
    ['version', `${s.version} (protocol ${s.protocolVersion})`],
    ['uptime', formatDuration(s.uptimeMs)],
    ['state', s.statePath],
    ['socket', s.socket ?? '(none: stdio only)'],
    ...(server ? [['answered by', describeSource(server)] as [string, string]] : []),
    ['durability', s.durability],
    ['connections', String(s.connections)],
    ['subscriptions', String(s.subscriptions)],
    ...(s.statesOpen === undefined ? [] : [['states open', `${s.statesOpen} (shared server)`] as [string, string]]),
    ['revision', String(s.revision)],
    ['wal bytes', String(s.walBytes)],
    ['calls', `${sum(s, 'calls')} (${sum(s, 'errors')} errors)`],
    ['write latency', s.counters.writeLatencyMs.p50 === null ? 'no write yet' : `p50 ${s.counters.writeLatencyMs.p50} ms, p99 ${s.counters.writeLatencyMs.p99} ms (last ${s.counters.writeLatencyMs.samples} writes)`],
    ['fsyncs', String(s.counters.fsyncs)],
    ['compactions', String(s.counters.compactions)],
    ['last storage error', err ? `${err.at} ${err.code ? `${err.code} ` : ''}${err.message}` : 'none'],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${`${k}:`.padEnd(width + 2)}${v}\n`).join('');
}

/** Calls (or errors) of every method together. */
function sum(s: Status, what: 'calls' | 'errors'): number {
  return Object.values(s.counters.calls).reduce((n, c) => n + c[what], 0);
}

function formatDuration(ms: number): string {
  const s = Math.floor(ms / 1000);
  const parts = [[Math.floor(s / 86400), 'd'], [Math.floor((s % 86400) / 3600), 'h'], [Math.floor((s % 3600) / 60), 'm'], [s % 60, 's']] as const;
  const shown = parts.filter(([n], i) => n > 0 || i === parts.length - 1);
  return shown.map(([n, u]) => `${n}${u}`).join(' ');
}
