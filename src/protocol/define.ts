// A method is declared once: wire name, one-line summary, zod params and result, the errors it
// may answer. Server validation, TS types, the typed client and schema/ all derive from this.
import type { z } from 'zod';
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
  /** One call as a client makes it and what it answers: for the README and OpenRPC `examples`. */
  readonly example: { readonly params: z.input<P>; readonly result?: z.input<R> };
}

export function defineMethod<const M extends string, P extends z.ZodType, R extends z.ZodType>(
  def: MethodDef<P, R> & { readonly method: M },
): MethodDef<P, R> & { readonly method: M } {
  return def;
}

export type ParamsOf<M extends MethodDef> = z.input<M['params']>;
export type ParsedParamsOf<M extends MethodDef> = z.output<M['params']>;
export type ResultOf<M extends MethodDef> = z.output<M['result']>;

/** The typed client's function name for a method: `session/add` → `sessionAdd`. */
export type FunctionName<S extends string> = S extends `${infer A}/${infer B}`
  ? `${A}${Capitalize<FunctionName<B>>}`
  : S extends `${infer A}.${infer B}`
    ? `${A}${Capitalize<FunctionName<B>>}`
    : S;

export function functionName<S extends string>(method: S): FunctionName<S> {
  return method.replace(/[/.](.)/g, (_m, c: string) => c.toUpperCase()) as FunctionName<S>;
}

/** A notification the server sends to subscribers. */
export interface NotificationDef<P extends z.ZodType = z.ZodType> {
  readonly method: string;
  readonly summary: string;
  readonly params: P;
}

export function defineNotification<const M extends string, P extends z.ZodType>(
  def: NotificationDef<P> & { readonly method: M },
): NotificationDef<P> & { readonly method: M } {
  return def;
}
