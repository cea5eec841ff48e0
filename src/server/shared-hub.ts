// The shared server's routing: each connection is bound to one state, the one its first request
// names (initialize's `state`; any other first request: the default state), and served by that
// state's unit (state-unit.ts: its own store, lock and StateServer). The connection's messages
// are held until the state is open (held-reader.ts). Concurrent first calls on one state share
// its opening; a state that cannot be opened (locked, damaged, not private) answers the held
// requests with the store's error and ends that connection, and every other state goes on.
import path from 'node:path';
import type { Logger } from 'pino';
import type { Message, RequestMessage } from 'vscode-jsonrpc/node';
import { ResponseError } from 'vscode-jsonrpc/node';
import { ErrorCodes } from '../protocol/errors.js';
import type { StoreOptions } from '../store/store.js';
import { Store } from '../store/store.js';
import { StoreError } from '../store/store-error.js';
import type { FramedTransport } from '../transport/framing.js';
import { readLiveServerRecord } from '../transport/server-record.js';
import type { ServerConnection } from './connection.js';
import { HeldReader } from './held-reader.js';
import { stateKey } from './state-key.js';
import { StateUnit } from './state-unit.js';
import type { SubscriptionLimits } from './feed-limits.js';
import { toRpcError } from './to-rpc-error.js';

/** Messages a connection may send before its state is open; one more ends it (a client waits for its first answer). */
export const MAX_HELD_MESSAGES = 1000;

export interface SharedHubOptions {
  log: Logger;
  version: string;
  /** The state a connection is bound to when its first request names none. */
  defaultState: string;
  /** Options of every Store.open (durability…); `warn` and `error` go to the log. */
  store?: StoreOptions;
  /** Opens a state's store (default Store.open; a test passes its own to hold or fail an open or a close). */
  openStore?: (statePath: string, options: StoreOptions) => Promise<Store>;
  /** Drop a state once nothing has used it for this many ms. */
  stateIdleMs: number;
  /** How long a drop waits for answers still owed. */
  graceMs: number;
  /** The shared server's socket, for `status`. */
  socket: () => string | undefined;
  feed?: SubscriptionLimits;
  /** Told once a state is dropped and its store closed (a test awaits it). */
  dropped?: (statePath: string, why: string) => void;
}

const isRequest = (m: Message): m is RequestMessage => 'method' in m && 'id' in m && (m as { id: unknown }).id !== undefined;

/** The state a first request names: initialize's `state`, else none (the default state). A `state` of a wrong type is refused. */
function stateNamed(m: RequestMessage): string | ResponseError<unknown> | undefined {
  if (m.method !== 'initialize' || typeof m.params !== 'object' || m.params === null || Array.isArray(m.params)) return undefined;
  const state = (m.params as { state?: unknown }).state;
  if (state === undefined) return undefined;
  if (typeof state === 'string' && state !== '') return state;
  return new ResponseError(ErrorCodes.InvalidParams, 'invalid params: state: a state file path (a non-empty string) expected', {
    issues: [{ path: ['state'], message: 'a state file path (a non-empty string) expected' }],
  });
}

export class SharedHub {
  /** Open units by their state's real path (and by the path the store resolved it to, when they differ). */
  private readonly units = new Map<string, StateUnit>();
  /** Opens in progress, by key: concurrent first calls on one state share one. */
  private readonly opening = new Map<string, Promise<StateUnit>>();
  /** Drops in progress, by key: the next open of that state waits until its locks are released. */
  private readonly closing = new Map<string, Promise<void>>();
  private readonly open = new Set<StateUnit>();
  private stopping = false;

  constructor(private readonly o: SharedHubOptions) {}

  /** States open now. */
  get size(): number {
    return this.open.size;
  }

  /** Serves one connection: holds its messages until its state is chosen and open. */
  accept(t: FramedTransport): void {
    let chosen = false;
    t.reader.onClose(() => {
      // A client that left before its first request: end our side too (a bound one is ended by its unit).
      if (!chosen) t.close();
    });
    const held: HeldReader = new HeldReader(t.reader, (m) => {
      if (chosen) return;
      if (held.heldCount > MAX_HELD_MESSAGES) {
        chosen = true;
        this.refuse(t, held, new ResponseError(ErrorCodes.InvalidRequest, `more than ${MAX_HELD_MESSAGES} messages before the first request`));
        return;
      }
      if (!isRequest(m)) return;
      chosen = true;
      const named = stateNamed(m);
      if (named instanceof ResponseError) return this.refuse(t, held, named);
      void this.bindTo(path.resolve(named ?? this.o.defaultState), held, t);
    });
  }

  /** Drops every state (answers owed, stores closed, connections ended); later connections are refused. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.allSettled(this.opening.values());
    await Promise.all([...this.open].map((u) => u.drop('the shared server is stopping')));
    await Promise.all(this.closing.values());
  }

  private async bindTo(state: string, held: HeldReader, t: FramedTransport): Promise<ServerConnection | undefined> {
    // One retry: a unit found just as its drop began is replaced by a fresh one.
    for (let attempt = 0; attempt < 2; attempt++) {
      let unit: StateUnit;
      try {
        unit = await this.unitFor(state);
      } catch (err) {
        this.refuse(t, held, await this.openError(state, err));
        return undefined;
      }
      const conn = unit.bind(held, t);
      if (conn) return conn;
    }
    this.refuse(t, held, new ResponseError(ErrorCodes.InternalError, `the state ${state} was dropped twice while this connection was bound to it; try again`));
    return undefined;
  }

  private async unitFor(state: string): Promise<StateUnit> {
    if (this.stopping) throw new ResponseError(ErrorCodes.ShuttingDown, 'the shared server is stopping');
    const key = await stateKey(state);
    const unit = this.units.get(key);
    if (unit && !unit.isDropping) return unit;
    let opening = this.opening.get(key);
    if (!opening) {
      opening = this.openUnit(key);
      this.opening.set(key, opening);
      const forget = (): void => void (this.opening.get(key) === opening && this.opening.delete(key));
      opening.then(forget, forget);
    }
    return opening;
  }

  private async openUnit(key: string): Promise<StateUnit> {
    await this.closing.get(key);
    if (this.stopping) throw new ResponseError(ErrorCodes.ShuttingDown, 'the shared server is stopping');
    const log = this.o.log.child({ state: key });
    const gone = { dir: false };
    const openStore = this.o.openStore ?? ((statePath, options) => Store.open(statePath, options));
    const store = await openStore(key, {
      warn: (message, err) => log.warn({ err }, message),
      error: (message, err) => (gone.dir ? log.debug({ err }, message) : log.error({ err }, message)),
      ...this.o.store,
    });
    // The store resolves the dir's links: a later call may name the state by that path.
    const keys = [...new Set([key, store.statePath])];
    const unit: StateUnit = new StateUnit(store, gone, {
      log,
      version: this.o.version,
      socket: this.o.socket,
      statesOpen: () => this.size,
      idleMs: this.o.stateIdleMs,
      graceMs: this.o.graceMs,
      ...(this.o.feed ? { feed: this.o.feed } : {}),
      dropping: (why, done) => {
        for (const k of keys) {
          if (this.units.get(k) === unit) this.units.delete(k);
          this.closing.set(k, done);
        }
        void done.then(() => {
          this.open.delete(unit);
          for (const k of keys) if (this.closing.get(k) === done) this.closing.delete(k);
          log.info({ why, states: this.open.size }, 'state dropped');
          this.o.dropped?.(store.statePath, why);
        });
      },
    });
    for (const k of keys) this.units.set(k, unit);
    this.open.add(unit);
    log.info({ states: this.open.size }, 'state opened');
    return unit;
  }

  /** The error a state that cannot be opened answers: the store's, with the holder's socket when its lock is held by a server. */
  private async openError(state: string, err: unknown): Promise<ResponseError<unknown>> {
    if (err instanceof StoreError && err.kind === 'locked') {
      const pid = typeof err.data?.pid === 'number' && Number.isSafeInteger(err.data.pid) ? err.data.pid : undefined;
      // The socket is a hint the client may follow; a record that cannot be read leaves it out,
      // and the StateLocked answer (the store's words, the pid) is told all the same.
      const record = await readLiveServerRecord(state).catch(() => undefined);
      return new ResponseError(ErrorCodes.StateLocked, err.message, { ...(pid !== undefined ? { pid } : {}), ...(record ? { socket: record.socket } : {}) });
    }
    const { error, unexpected } = toRpcError(err);
    if (unexpected) this.o.log.error({ err, state }, 'opening a state failed');
    else this.o.log.info({ state, code: error.code, message: error.message }, 'a state could not be opened');
    return error;
  }

  /** Answers every request held on the connection with `error`, then ends it. */
  private refuse(t: FramedTransport, held: HeldReader, error: ResponseError<unknown>): void {
    for (const m of held.takeHeld()) {
      if (isRequest(m)) void t.writer.write({ jsonrpc: '2.0', id: m.id, error: error.toJson() } as Message).catch(() => undefined);
    }
    t.close();
  }
}
