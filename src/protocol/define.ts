// A method is declared once: wire name, one-line summary, zod params and result, the errors it
// may answer. Server validation, TS types, the typed client and schema/ all derive from this.
import type * as z from 'zod';
import type { ErrorName } from './errors.js';

export interface MethodDef<P extends z.ZodType = z.ZodType, R extends z.ZodType = z.ZodType> {
  readonly method: string;
  readonly summary: string;
  readonly params: P;
  readonly result: R;
  readonly errors: readonly ErrorName[];
  /** A notification gets no reply (JSON-RPC): `exit`. */
  readonly notification?: boolean;
  /** Changes state: refused after `shutdown`, ordered after the connection's earlier writes. */
  readonly mutates?: boolean;
  /**
   * The Go client's method name, when it is not the wire name in PascalCase (`session/foo` →
   * `SessionFoo`): the Go `state` package's function, so `st.AddSession(s)` becomes
   * `c.AddSession(ctx, s)`. Lower-case leaves the generated method unexported, for one a
   * hand-written method wraps (`subscribe`, under `Watch`). The Python client's name is this one
   * in snake_case. OpenRPC carries it as `x-go-name`.
   */
  readonly goName?: string;
  /** One call as a client makes it and what it answers: for the README and OpenRPC `examples`. */
  readonly example: { readonly params: z.input<P>; readonly result?: z.input<R> };
}

/**
 * A method as declared: params and result each as a function that builds the schema. The schemas
 * are built on first use (a method's first call, its first `initialize`, schema/), not when the
 * protocol is imported: a server's start builds only what its first requests use (building every
 * schema of every method at import would be a large part of its start-up CPU).
 */
export type MethodSpec<P extends z.ZodType, R extends z.ZodType> = Omit<MethodDef<P, R>, 'params' | 'result'> & {
  readonly params: () => P;
  readonly result: () => R;
};

/** Replaces each of `keys`, a function on `spec`, by a getter that calls it once and keeps what it built. */
function builtOnFirstUse<T extends object>(spec: T, keys: readonly string[]): T {
  const def = { ...spec };
  for (const key of keys) {
    const build = (spec as Record<string, () => unknown>)[key] as () => unknown;
    let built: { value: unknown } | undefined;
    Object.defineProperty(def, key, {
      get: () => (built ??= { value: build() }).value,
      enumerable: true,
    });
  }
  return def;
}

export function defineMethod<const M extends string, P extends z.ZodType, R extends z.ZodType>(
  spec: MethodSpec<P, R> & { readonly method: M },
): MethodDef<P, R> & { readonly method: M } {
  return builtOnFirstUse(spec, ['params', 'result']) as unknown as MethodDef<P, R> & { readonly method: M };
}

/** A method's params as its handler gets them: parsed against the contract, defaults filled in. */
export type ParsedParamsOf<M extends MethodDef> = z.output<M['params']>;

export type { FunctionName } from './function-name.js';
export { functionName } from './function-name.js';

/** A notification the server sends to subscribers. */
export interface NotificationDef<P extends z.ZodType = z.ZodType> {
  readonly method: string;
  readonly summary: string;
  readonly params: P;
}

/** A notification as declared: its params as a function that builds the schema, on first use. */
export type NotificationSpec<P extends z.ZodType> = Omit<NotificationDef<P>, 'params'> & { readonly params: () => P };

export function defineNotification<const M extends string, P extends z.ZodType>(
  spec: NotificationSpec<P> & { readonly method: M },
): NotificationDef<P> & { readonly method: M } {
  return builtOnFirstUse(spec, ['params']) as unknown as NotificationDef<P> & { readonly method: M };
}
