// The package's public entry: what an editor extension or a TypeScript bridge imports.
export { connect } from './client.js';
export { spawn } from './spawn.js';
export { functionName } from '../protocol/function-name.js';
export type { StateClient, ConnectOptions, Framing, MethodFunctions, CallOptions, ConnectionState, ReconnectOptions, RawConnection } from './client.js';
export type { SpawnedClient, SpawnOptions } from './spawn.js';
export { CallTimeoutError, ConnectionClosedError, StartError } from './client-errors.js';
export { ErrorCodes } from '../protocol/error-codes.js';
export type { ErrorName, ErrorCode } from '../protocol/error-codes.js';
export type { MethodName, MethodParams, MethodResults, NotificationName, NotificationParams, GoInteger } from './contract-types.js';
export type { HomeRef, Session, NewSession, TranscriptEntry, StateDocument } from './contract-types.js';
export type { MethodTable } from './method-table.js';
export { SocketError, SocketErrorCodes } from '../transport/socket-error.js';
export type { SocketErrorCode } from '../transport/socket-error.js';
export { defaultStatePath, discoverSocket } from '../transport/discovery.js';
export type { FoundSocket, SocketSource, DiscoverOptions } from '../transport/discovery.js';
export { ResponseError } from './response-error.js';
export type { ResponseErrorConstructor } from './response-error.js';
