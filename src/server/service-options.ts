// What a Service (service.ts) is given and answers: its options, how a connection reaches it,
// how long its stop waits, and why it stopped. service.ts re-exports them for its callers.
import type { Logger } from 'pino';
import type { StoreOptions } from '../store/store.js';
import type { FramedTransportOptions } from '../transport/framing.js';
import type { ServerConnection } from './connection.js';
import type { IdleTimers } from './idle-watch.js';
import type { ServerOptions } from './server.js';
import type { DirWatchIo } from './state-dir-watch.js';

/** How long a stop waits for requests in flight before it ends the connections anyway. */
export const STOP_GRACE_MS = 5000;

/** How a connection reaches the server: the host on stdio (its end stops the server) or a socket client. */
export type ConnectionKind = 'stdio' | 'socket';

export interface ServiceOptions {
  /** The state file to own (its folder is the state dir). */
  state: string;
  log: Logger;
  version: string;
  /** Options of Store.open; `warn` and `error` default to the log. */
  store?: StoreOptions;
  /** Framing of every connection; protocol errors are logged at debug unless told otherwise. */
  framing: FramedTransportOptions;
  /** Who may send shutdown and exit (`serve --stdio`: only the host). */
  lifecycleOwner?: ServerOptions['lifecycleOwner'];
  /**
   * Stop with 0 when a connection that sent `shutdown` closes without `exit` (`serve` without a
   * host: that client owned the stop, and a server refusing every write is of no use to anyone).
   */
  stopWhenShutdownClientLeaves?: boolean;
  /** Bounds of the change feed (tests go lower). */
  feed?: ServerOptions['feed'];
  /** How long a stop waits for answers still owed (default STOP_GRACE_MS). */
  stopGraceMs?: number;
  /** Stop with 0 once no connection has been open and no request in flight for this many ms (`--exit-when-idle`). */
  exitWhenIdleMs?: number;
  /** The timers of the exitWhenIdleMs watch (default: the real ones; a test drives its own). */
  idleTimers?: IdleTimers;
  /** Told of connections coming and going (default: the exitWhenIdleMs watch, if any). */
  presence?: ServerOptions['presence'];
  /** Stop when the state dir is removed (default true). */
  watchStateDir?: boolean;
  /** Told after each look of that watch that found the dir in place (a test waits on it). */
  stateDirStillThere?: () => void;
  /** The file system calls and timers of that watch (default: the real ones; a test passes its own). */
  stateDirIo?: Partial<DirWatchIo>;
  /** Told of every connection, after the server's own listeners are on it. */
  onConnection?: (conn: ServerConnection, kind: ConnectionKind) => void;
}

/** Why and with which exit code a service stopped. */
export interface Stopped {
  code: number;
  why: string;
}

export interface ListenOptions {
  /** Write the server record so clients that know the state file find the socket (default true). */
  record?: boolean;
}
