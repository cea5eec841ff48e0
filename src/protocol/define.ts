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
}

export function defineMethod<const M extends string, P extends z.ZodType, R extends z.ZodType>(
  def: MethodDef<P, R> & { readonly method: M },
): MethodDef<P, R> & { readonly method: M } {
  return def;
}

export type ParamsOf<M extends MethodDef> = z.input<M['params']>;
export type ParsedParamsOf<M extends MethodDef> = z.output<M['params']>;
export type ResultOf<M extends MethodDef> = z.output<M['result']>;
