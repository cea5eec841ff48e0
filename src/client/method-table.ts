// Each method's params and result by wire name, as the client's types see them (plain types:
// the contract's zod schemas stay inside the package).
import type { MethodName, MethodParams, MethodResults } from './contract-types.js';

export type MethodTable = { [M in MethodName]: { params: MethodParams[M]; result: MethodResults[M] } };
