// The server: one store, any number of connections, and the lifecycle they share (initialize,
// shutdown, exit). Transports hand it a reader and writer per client; it never opens files.
import path from 'node:path';
import type { Logger } from 'pino';
import type { MessageReader, MessageWriter } from 'vscode-jsonrpc/node';
import { ResponseError } from 'vscode-jsonrpc/node';
import * as z from 'zod';
import { ErrorCodes } from '../protocol/errors.js';
import { openRpcDocument } from '../protocol/openrpc.js';
import { PROTOCOL_VERSION } from '../protocol/lifecycle.js';
import type { MethodDef } from '../protocol/define.js';
import { methodList } from '../protocol/table.js';
import type { BackupResult } from '../store/backup.js';
import { backupStore } from '../store/backup.js';
import { isPathComponent } from '../store/paths.js';
import type { Store } from '../store/store.js';
import type { ForwardCursor } from '../store/transcript-pages.js';
import type { ServerContext } from './bind.js';
import { ServerConnection } from './connection.js';
import type { FeedPage, SubscriptionLimits } from './feed-limits.js';
import { Subscriptions } from './subscriptions.js';
import { WriteHold } from './write-hold.js';
import { stateKey } from './state-key.js';
import { CallMetrics } from './call-metrics.js';

export interface ServerOptions {
  readonly version: string;
  /** Called for the `exit` notification with the code LSP prescribes: 0 after shutdown, else 1. */
  readonly onExit: (code: number) => void;
  /**
   * Which connections may send `shutdown` and `exit`: with a host on stdio, only it (a socket
   * client must not stop the server under the host); without one, any client (the operator);
   * none on the shared server, whose other states' clients it serves too.
   */
  readonly lifecycleOwner?: 'stdio' | 'any' | 'none';
  /** Where the server listens now (it can move after an instance id change); none for stdio alone. */
  readonly socket?: () => string | undefined;
  /** On the shared server: the states it has open now (`status`' statesOpen). */
  readonly statesOpen?: () => number;
  /**
   * Called when a connection that sent `shutdown` closes without `exit`: a socket-only server
   * then stops, as it would at `exit`, instead of running on while refusing every write.
   */
  readonly onShutdownClientGone?: () => void;
  /** Bounds of the change feed (defaults in feed-limits.ts; tests go lower). */
  readonly feed?: SubscriptionLimits;
  /** Told when a connection opens, and when one has closed and answered all it received. */
  readonly presence?: { enter(): void; leave(): void };
}

/** A page of the entries of `name` from seq `from` on, as far as its file still has them, and the next seq. */
async function entriesFrom(store: Store, name: string, from: number, bounds: { limit: number; maxBytes: number }, cursor: unknown): Promise<FeedPage> {
  // A name that cannot be a file (a legacy row's) has no transcript to catch up on.
  if (!isPathComponent(name)) return { firstSeq: from, entries: [], end: from };
  // The cursor is one this function returned for the page before (the feed passes it back untouched).
  return store.readTranscriptFrom(name, from, bounds, cursor as ForwardCursor | undefined);
}

/** The names of the params a method accepts: its params object's keys, through optional/default. */
export function paramNames(def: MethodDef): string[] {
  let s: unknown = def.params;
  for (let depth = 0; depth < 8 && s !== undefined; depth++) {
    if (s instanceof z.ZodObject) return Object.keys(s.shape);
    s = (s as { _zod?: { def?: { innerType?: unknown } } })._zod?.def?.innerType;
  }
  return [];
}

let capabilitiesOnce: { methods: string[]; params: Record<string, string[]> } | undefined;
/** initialize's capabilities: the same for every server of the process, so made once (every connection of the shared server asks). */
function capabilities(): { methods: string[]; params: Record<string, string[]> } {
  return (capabilitiesOnce ??= {
    methods: methodList.map((d) => d.method),
    params: Object.fromEntries(methodList.map((d) => [d.method, paramNames(d)])),
  });
}

export class StateServer {
  private readonly connections = new Set<ServerConnection>();
  private shuttingDown: Promise<void> | undefined;
  private nextId = 1;
  private discovery: Record<string, unknown> | undefined;
  private readonly startedAt = Date.now();
  private readonly shared: Omit<ServerContext, 'subscribe' | 'unsubscribe'>;
  readonly subscriptions: Subscriptions;
  /** Every connection's writes pass it: a backup holds them while it fixes the copy. */
  readonly writes = new WriteHold();
  /** Calls answered, per method, and write latency, for `status`. */
  readonly metrics = new CallMetrics();
  private connectionsOpened = 0;
  /** Backups run one after another. */
  private backups: Promise<unknown> = Promise.resolve();

  constructor(
    readonly store: Store,
    private readonly log: Logger,
    private readonly options: ServerOptions,
  ) {
    this.subscriptions = new Subscriptions(options.feed, {
      get revision() {
        return store.revision;
      },
      epoch: store.epoch,
      document: () => store.getState(),
      entriesFrom: (name, from, bounds, cursor) => entriesFrom(store, name, from, bounds, cursor),
      error: (message, err) => log.error({ err }, message),
    });
    store.watch({
      stateCommitted: (revision, before, after) => this.subscriptions.stateCommitted(revision, before, after),
      transcriptAppended: (name, seq, entry) => this.subscriptions.transcriptAppended(name, seq, entry),
      participantAdded: (name, userId) => this.subscriptions.participantAdded(name, userId),
    });
    this.shared = {
      store,
      writes: this.writes,
      metrics: this.metrics,
      initialize: async (params) => {
        if (params.state !== undefined) await this.assertServes(params.state);
        return {
          serverInfo: { name: 'herrscher-state', version: options.version },
          protocolVersion: PROTOCOL_VERSION,
          statePath: store.statePath,
          capabilities: capabilities(),
        };
      },
      status: () => this.status(),
      backup: (dest) => this.backup(dest),
      shutdown: () => this.shutdown(),
      exit: () => options.onExit(this.shuttingDown ? 0 : 1),
      discover: () => (this.discovery ??= openRpcDocument(options.version)),
    };
  }

  /** Serves one client over `reader`/`writer`; the connection ends when the reader closes. */
  connect(reader: MessageReader, writer: MessageWriter, transport: string): ServerConnection {
    const subs = this.subscriptions;
    const owner = this.options.lifecycleOwner ?? 'any';
    const mayEnd = owner === 'any' || transport === owner;
    const refuse = (): never => {
      throw new ResponseError(
        ErrorCodes.InvalidRequest,
        owner === 'none'
          ? 'the shared server serves other clients too: it stops on SIGTERM or once unused (--exit-when-idle), never for one client'
          : 'shutdown and exit belong to the host on stdio; this connection may not end the server',
      );
    };
    let sentShutdown = false;
    const ctx: ServerContext = {
      ...this.shared,
      shutdown: mayEnd
        ? () => {
            sentShutdown = true;
            return this.shared.shutdown();
          }
        : refuse,
      exit: mayEnd ? this.shared.exit : () => this.log.warn({ transport }, 'exit from a client that does not own the server ignored'),
      subscribe: (filter) => subs.subscribe(conn, filter),
      unsubscribe: (id) => subs.remove(conn, id),
    };
    const conn: ServerConnection = new ServerConnection(reader, writer, ctx, this.log.child({ conn: this.nextId++, transport }));
    this.connections.add(conn);
    this.connectionsOpened++;
    const presence = this.options.presence;
    presence?.enter();
    conn.onClose(() => {
      subs.removeAll(conn);
      this.connections.delete(conn);
      conn.log.debug('connection closed');
      if (presence) void conn.idle().then(() => presence.leave());
      if (sentShutdown) this.options.onShutdownClientGone?.();
    });
    conn.listen();
    conn.log.debug('connection opened');
    return conn;
  }

  /** Refuses (NotThisState) a `state` that names another file than the one this server serves. */
  private async assertServes(state: string): Promise<void> {
    const wanted = path.resolve(state);
    if ((await stateKey(wanted)) === this.store.statePath) return;
    throw new ResponseError(ErrorCodes.NotThisState, `this server serves ${this.store.statePath}, not ${wanted}`);
  }

  /** What `status` answers: identity, load and storage health, as of now. */
  status(): ReturnType<ServerContext['status']> {
    const now = Date.now();
    const health = this.store.health.snapshot(now);
    const last = health.lastStorageError;
    return {
      pid: process.pid,
      version: this.options.version,
      protocolVersion: PROTOCOL_VERSION,
      startedAt: new Date(this.startedAt).toISOString(),
      uptimeMs: now - this.startedAt,
      statePath: this.store.statePath,
      socket: this.options.socket?.() ?? null,
      durability: this.store.durability,
      connections: this.connections.size,
      subscriptions: this.subscriptions.size,
      ...(this.options.statesOpen ? { statesOpen: this.options.statesOpen() } : {}),
      revision: this.store.revision,
      walBytes: this.store.walBytes,
      lastStorageError: last ? { message: last.message, ...(last.code ? { code: last.code } : {}), at: new Date(last.at).toISOString() } : null,
      checkpointFailing: health.checkpointFailing,
      stopping: this.shuttingDown !== undefined,
      // A server that refuses writes is not healthy, whatever its storage says.
      healthy: health.healthy && this.shuttingDown === undefined,
      counters: {
        ...this.metrics.snapshot(),
        fsyncs: this.store.counters.fsyncs,
        compactions: this.store.counters.compactions,
        connectionsOpened: this.connectionsOpened,
        catchUps: this.subscriptions.catchUp.running,
      },
    };
  }

  /** A consistent copy of the state dir in `dest`, at the revision it answers (store/backup.ts). */
  backup(dest: string): Promise<BackupResult> {
    const run = this.backups.then(() => backupStore(this.store, dest, (fn) => this.writes.quiet(fn)));
    this.backups = run.catch(() => undefined);
    return run;
  }

  /** Finishes every pending write, then refuses writes (-32030). Idempotent. */
  shutdown(): Promise<void> {
    this.shuttingDown ??= (async () => {
      this.store.refuseWrites();
      await this.store.flush();
      this.log.info('shutdown: pending writes finished, writes refused from now on');
    })();
    return this.shuttingDown;
  }

  /** Resolves when every connection has answered what it received (bounded by the caller). */
  async idle(): Promise<void> {
    await Promise.all([...this.connections].map((c) => c.idle()));
  }

  /** Ends every connection. */
  disposeAll(): void {
    for (const c of this.connections) c.dispose();
    this.connections.clear();
  }
}
