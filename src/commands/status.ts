// `herrscher-state status [--json]`: the running server's identity, load and storage health.
// Exit 0 when healthy, 1 when not (a failing checkpoint, a storage error in the last minute, a
// state.json that cannot be loaded, a server stopping after `shutdown`) or
// when no server answers: a host's or a monitor's health check can use the exit code alone.
import { connect } from '../client/client.js';
import type { MethodTable } from '../protocol/table.js';
import type * as z from 'zod';
import type { ClientOptions } from './client-options.js';
import { replyTimeoutMs } from './reply-timeout.js';

type Status = z.output<MethodTable['status']['result']>;

export async function status(o: ClientOptions & { json: boolean }): Promise<number> {
  let s: Status;
  try {
    const client = await connect({ ...o, callTimeoutMs: replyTimeoutMs() });
    try {
      s = await client.status();
    } finally {
      await client.close();
    }
  } catch (err) {
    process.stderr.write(`herrscher-state status: ${(err as Error).message}\n`);
    return 1;
  }
  process.stdout.write(o.json ? `${JSON.stringify(s, null, 2)}\n` : formatStatus(s));
  return s.healthy ? 0 : 1;
}

/** The human form: one `key: value` line each, the verdict first. */
export function formatStatus(s: Status): string {
  const err = s.lastStorageError;
  const rows: [string, string][] = [
    ['health', s.healthy ? 'healthy' : s.stopping ? 'STOPPING (shutdown received: writes refused)' : `UNHEALTHY${s.checkpointFailing ? ' (checkpoint failing)' : ' (a storage error in the last minute, or state.json cannot be loaded: see the last storage error)'}`],
    ['pid', String(s.pid)],
    ['version', `${s.version} (protocol ${s.protocolVersion})`],
    ['uptime', formatDuration(s.uptimeMs)],
    ['state', s.statePath],
    ['socket', s.socket ?? '(none: stdio only)'],
    ['durability', s.durability],
    ['connections', String(s.connections)],
    ['subscriptions', String(s.subscriptions)],
    ['revision', String(s.revision)],
    ['wal bytes', String(s.walBytes)],
    ['last storage error', err ? `${err.at} ${err.code ? `${err.code} ` : ''}${err.message}` : 'none'],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${`${k}:`.padEnd(width + 2)}${v}\n`).join('');
}

function formatDuration(ms: number): string {
  const s = Math.floor(ms / 1000);
  const parts = [[Math.floor(s / 86400), 'd'], [Math.floor((s % 86400) / 3600), 'h'], [Math.floor((s % 3600) / 60), 'm'], [s % 60, 's']] as const;
  const shown = parts.filter(([n], i) => n > 0 || i === parts.length - 1);
  return shown.map(([n, u]) => `${n}${u}`).join(' ');
}
