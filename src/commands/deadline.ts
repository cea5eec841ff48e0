// --timeout for a command that bounds the whole request (`call`, `status`): connecting and the reply.

/** A promise that rejects once `ms` have passed, naming --timeout; `cancel` stops it. */
export function deadline(ms: number): { expired: Promise<never>; cancel: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no reply within ${ms} ms (--timeout ${ms} bounds the whole request)`)), ms);
  });
  expired.catch(() => undefined); // rejected only when raced: unhandled otherwise
  return { expired, cancel: () => clearTimeout(timer) };
}
