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
    revision: z.number().int().nonnegative().describe('State commits since the server started (the change feed\'s revision).'),
    walBytes: z.number().int().nonnegative().describe('Bytes in the write-ahead log not yet checkpointed (0 with durability write).'),
    lastStorageError: StorageErrorInfo.nullable(),
    checkpointFailing: z.boolean().describe('The last checkpoint of the write-ahead log failed and none succeeded since.'),
    stopping: z.boolean().describe('`shutdown` was received: writes are refused (-32030) and the server stops at `exit`.'),
    healthy: z.boolean(),
  }),
  errors: [],
  example: {
    params: {},
    result: {
      pid: 4242, version: '0.1.0', protocolVersion: '1.2.0', startedAt: '2026-01-01T10:00:00.000Z', uptimeMs: 3600000,
      statePath: '/home/u/.config/herrscher/state.json', socket: '/run/user/1000/herrscher-state/herrscher-state.sock',
      durability: 'sync', connections: 2, subscriptions: 1, revision: 17, walBytes: 4096,
      lastStorageError: null, checkpointFailing: false, stopping: false, healthy: true,
    },
  },
});
