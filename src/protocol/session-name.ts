// session/add's name rule, apart from the model (src/protocol/model.ts applies it) so that the
// typed client, which loads no zod, uses the same definition. The Go and Python clients get it
// from `npm run schema`, which reads it back from the OpenRPC document (scripts/contract-names.ts).

/** 1–64 letters, digits, `-` or `_`, starting with a letter or digit: one path component. */
export const SESSION_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
