// The one place errno codes are read off an error. The store tolerates an error only by name
// (`ENOENT` where absence means something, `EEXIST` for an exclusive create); everything else
// rejects its caller or reaches the log at `error`.

/** The errno name of `err` (`ENOENT`, `EIO`…), or undefined for an error that has none. */
export function errnoOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Whether `err` is a file-system error with one of `codes`. */
export function isErrno(err: unknown, ...codes: string[]): boolean {
  const code = errnoOf(err);
  return code !== undefined && codes.includes(code);
}
