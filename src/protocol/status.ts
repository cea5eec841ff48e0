// `status`: what an operator (or a host's health check) asks a running server: who it is, what
// it serves, how busy it is, and whether its storage is healthy.
import * as z from 'zod';
import { defineMethod } from './define.js';

export const StorageErrorInfo = z.object({
  message: z.string().describe('What was being done and what the file system answered.'),
  code: z.string().optional().describe('The errno name (ENOSPC, EIO…) when there is one.'),
  at: z.string().describe('When it happened (ISO 8601, UTC).'),
});
export type StorageErrorInfo = z.infer<typeof StorageErrorInfo>;

const StatusCounters = z
  .object({
    calls: z
      .record(z.string(), z.object({ calls: z.number().int().nonnegative(), errors: z.number().int().nonnegative() }).meta({ id: 'CallCount' }))
      .describe('Requests answered since the start, per method (those of no method of ours together under "(unknown method)"), and how many of them with an error.'),
    writeLatencyMs: z
      .object({
        p50: z.number().nullable(),
        p99: z.number().nullable(),
        samples: z.number().int().nonnegative().describe('Writes the percentiles are taken over: the latest, at most 1024.'),
      })
      .meta({ id: 'WriteLatency' })
      .describe('From receiving a write to its answer (queueing, the write and its sync included), in ms; null before the first write.'),
    fsyncs: z.number().int().nonnegative().describe('fsync/fdatasync calls the store made since the start: appends\' and replaced files\' syncs, folder syncs.'),
    compactions: z.number().int().nonnegative().describe('Transcript compactions since the start.'),
    connectionsOpened: z.number().int().nonnegative().describe('Connections opened since the start, stdio included (`connections` is how many are open now).'),
    catchUps: z.number().int().nonnegative().describe('Returning subscribers being sent what they missed now (watch/subscribe with `since`).'),
  })
  .meta({ id: 'StatusCounters' })
  .describe('Counts since the server started, for graphs (a restart begins them at 0 again; `startedAt` tells).');

export const status = defineMethod({
  method: 'status',
  summary: 'The server\'s identity, load and storage health; `healthy` is false while a checkpoint is failing, after a storage error in the last minute, while state.json, changed by another process, cannot be loaded (every write is refused until it is fixed), or once `shutdown` was received (`stopping`).',
  params: () => z.strictObject({}).optional(),
  result: () => z.object({
    pid: z.number().int(),
    version: z.string().describe('The server\'s package version.'),
    protocolVersion: z.string(),
    startedAt: z.string().describe('ISO 8601, UTC.'),
    uptimeMs: z.number().int().nonnegative(),
    statePath: z.string().describe('The absolute path of the state.json served.'),
    socket: z.string().nullable().describe('The unix socket the server listens on; null for stdio alone.'),
    durability: z.enum(['sync', 'write']),
    connections: z.number().int().nonnegative().describe('Open connections, stdio included.'),
    subscriptions: z.number().int().nonnegative().describe('Change-feed subscriptions over all connections.'),
    statesOpen: z.number().int().nonnegative().optional().describe('On the shared server (`serve --shared`): the states it has open now, this connection\'s among them. Absent on a dedicated server, which serves one.'),
    revision: z.number().int().nonnegative().describe('State commits since the server started (the change feed\'s revision).'),
    walBytes: z.number().int().nonnegative().describe('Bytes in the write-ahead log not yet checkpointed (0 with durability write).'),
    lastStorageError: StorageErrorInfo.nullable(),
    checkpointFailing: z.boolean().describe('The last checkpoint of the write-ahead log failed and none succeeded since.'),
    stopping: z.boolean().describe('`shutdown` was received: writes are refused (-32030) and the server stops at `exit`.'),
    healthy: z.boolean(),
    counters: StatusCounters,
  }),
  errors: [],
  example: {
    params: {},
    result: {
      pid: 4242, version: '0.1.0', protocolVersion: '1.4.0', startedAt: '2026-01-01T10:00:00.000Z', uptimeMs: 3600000,
      statePath: '/home/u/.config/herrscher/state.json', socket: '/run/user/1000/herrscher-state/herrscher-state.sock',
      durability: 'sync', connections: 2, subscriptions: 1, revision: 17, walBytes: 4096,
      lastStorageError: null, checkpointFailing: false, stopping: false, healthy: true,
      counters: {
        calls: { 'session/list': { calls: 40, errors: 0 }, 'transcript/append': { calls: 1200, errors: 2 } },
        writeLatencyMs: { p50: 1.9, p99: 7.4, samples: 1024 }, fsyncs: 1350, compactions: 1, connectionsOpened: 9, catchUps: 0,
      },
    },
  },
});
