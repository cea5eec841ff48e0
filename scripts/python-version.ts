// The Python client's __version__, one definition: package.json's version, written into
// clients/python/herrscher_state.py by `npm run schema` (the Python package's build reads it
// from there: clients/python/build_backend.py).
const VERSION_LINE = /^__version__ = "[^"\n]*"$/m;

export function withPythonVersion(source: string, version: string): string {
  if (!VERSION_LINE.test(source)) throw new Error('clients/python/herrscher_state.py lacks its __version__ = "…" line');
  return source.replace(VERSION_LINE, `__version__ = ${JSON.stringify(version)}`);
}
