// Where the state lives when --state is not given: one definition, beside the discovery rule.
export { defaultStatePath } from '../transport/discovery.js';
