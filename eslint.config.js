// Lint keeps the layer arrows (README, "Layout") honest: a wrong import fails CI, not review.
import tseslint from 'typescript-eslint';

const layer = (files, patterns) => ({
  files,
  rules: { 'no-restricted-imports': ['error', { patterns }] },
});

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'schema/**', '.stryker-tmp*/**', 'reports/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': ['error'],
    },
  },
  layer(['src/protocol/**'], [
    { group: ['node:*', 'vscode-jsonrpc', 'vscode-jsonrpc/*', 'pino', '../store/*', '../server/*', '../transport/*', '../client/*', '../cli.js', '../cli-main.js'], message: 'protocol is the floor: zod only' },
  ]),
  layer(['src/common/**'], [
    { group: ['vscode-jsonrpc', 'vscode-jsonrpc/*', 'pino', 'zod', '../*/*', '../cli.js', '../cli-main.js'], message: 'common holds plain helpers every layer may use: it imports none of ours' },
  ]),
  layer(['src/store/**'], [
    { group: ['vscode-jsonrpc', 'vscode-jsonrpc/*', '../server/*', '../transport/*', '../client/*', '../cli.js', '../cli-main.js'], message: 'store knows nothing of RPC' },
    { group: ['../protocol/*', '!../protocol/model.js'], message: 'store may import only protocol/model.js' },
  ]),
  layer(['src/transport/**'], [
    { group: ['../store/*', '../server/*', '../client/*', '../cli.js', '../cli-main.js'], message: 'transport knows neither store nor server' },
  ]),
  layer(['src/server/**'], [
    { group: ['../client/*', '../cli.js', '../cli-main.js'], message: 'server is below client and cli' },
  ]),
  layer(['src/commands/**'], [
    { group: ['../cli.js', '../cli-main.js'], message: 'nothing imports the CLI entry' },
  ]),
  layer(['src/client/**'], [
    { group: ['../store/*', '../server/*', '../cli.js', '../cli-main.js'], message: 'client talks to the server over a transport only' },
  ]),
  {
    // `import { z } from 'zod'` makes esbuild keep all of zod in the CLI bundle and build its
    // namespace objects (~900 getters) at every start; `import * as z` lets it keep what is used
    // (docs/performance.md, "What a start runs before its first reply").
    files: ['src/**'],
    rules: {
      'no-restricted-syntax': ['error', { selector: "ImportDeclaration[source.value='zod'] > ImportSpecifier", message: "import * as z from 'zod' (a named import keeps all of zod in the bundle)" }],
    },
  },
  {
    // Small files with one job and names that say it: a source file past 300 lines is split by
    // job, not let grow. The generated contract types are one table and exempt.
    files: ['src/**/*.ts'],
    ignores: ['src/client/contract-types.ts'],
    rules: { 'max-lines': ['error', { max: 300 }] },
  },
  {
    files: ['test/**', 'bench/**', 'scripts/**', 'examples/**'],
    rules: { 'no-console': 'off' },
  },
);
