// Timers an IdleWatch (src/server/idle-watch.ts) runs on, driven by the test: nothing fires by
// itself; `fireAll()` fires every timer pending now, as if any amount of time had passed.
import type { IdleTimers } from '../../src/server/idle-watch.js';

export interface DrivenTimers {
  timers: IdleTimers;
  /** How many timers are set and not yet fired or cleared. */
  pending(): number;
  /** Fires every timer pending now. */
  fireAll(): void;
}

export function drivenTimers(): DrivenTimers {
  const pending = new Set<{ fn: () => void }>();
  return {
    timers: {
      setTimeout: (fn) => {
        const timer = { fn };
        pending.add(timer);
        return timer;
      },
      clearTimeout: (timer) => void pending.delete(timer as { fn: () => void }),
    },
    pending: () => pending.size,
    fireAll: () => {
      const now = [...pending];
      pending.clear();
      for (const timer of now) timer.fn();
    },
  };
}
