// The read gate in the chain: a read starts only when its connection's ReadGate lets it (few
// reads running, few reply bytes unsent), so a client that stops reading its replies is held back.
import { cancellable } from './cancel-handler.js';
import type { CallHandler } from './handler.js';
import type { ReadGate } from './read-gate.js';

/** A write passes straight on (no promise of this link's own); a read waits for the gate. */
export function gateHandler(gate: ReadGate, next: CallHandler): CallHandler {
  const gated: CallHandler = async (call) => {
    const entry = gate.enter();
    try {
      await cancellable(entry, call.token);
    } catch (err) {
      // Cancelled while queued: the slot it will still be given goes back at once.
      void entry.then(() => gate.leave());
      throw err;
    }
    try {
      return await next(call);
    } finally {
      gate.leave();
    }
  };
  return (call) => (call.write ? next(call) : gated(call));
}
