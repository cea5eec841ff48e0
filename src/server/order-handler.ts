// The order of one connection's requests: a read waits for the writes that arrived before it, and
// a write for the reads before it, so a pipelining client sees the order it sent (its read
// neither misses an earlier write nor sees a later one), while writes behind writes and reads
// behind reads still run concurrently (the store applies writes in the order they are enqueued,
// which is arrival order: vscode-jsonrpc hands requests over one per turn). A read may be
// cancelled while it waits; a write is never. Plain objects, no promise per request: the hot
// path (a stream of appends) only adds to and deletes from a set.
import { cancellable } from './cancel-handler.js';
import type { CallHandler } from './handler.js';

/** A request in flight; `waiters` are told when it is answered. */
interface Op {
  waiters?: (() => void)[];
}

/** Resolves once every request open in `ops` now has been answered. */
function allOf(ops: ReadonlySet<Op>): Promise<void> {
  return new Promise((resolve) => {
    let left = ops.size;
    const done = (): void => {
      if (--left === 0) resolve();
    };
    for (const op of ops) (op.waiters ??= []).push(done);
  });
}

/** One connection's ordering: make one per connection, so connections never wait for each other. */
export function orderHandler(next: CallHandler): CallHandler {
  const openWrites = new Set<Op>();
  const openReads = new Set<Op>();
  return async (call) => {
    const before = call.write ? openReads : openWrites;
    const mine = call.write ? openWrites : openReads;
    const op: Op = {};
    mine.add(op);
    try {
      if (before.size > 0) await (call.write ? allOf(before) : cancellable(allOf(before), call.token));
      return await next(call);
    } finally {
      mine.delete(op);
      if (op.waiters) for (const w of op.waiters) w();
    }
  };
}
