// The typed client's function name for a method (`session/add` → `sessionAdd`): apart from
// define.ts, which holds zod's types, so the client's published declarations need none.

/** The typed client's function name for a method: `session/add` → `sessionAdd`. */
export type FunctionName<S extends string> = S extends `${infer A}/${infer B}`
  ? `${A}${Capitalize<FunctionName<B>>}`
  : S extends `${infer A}.${infer B}`
    ? `${A}${Capitalize<FunctionName<B>>}`
    : S;

export function functionName<S extends string>(method: S): FunctionName<S> {
  return method.replace(/[/.](.)/g, (_m, c: string) => c.toUpperCase()) as FunctionName<S>;
}
