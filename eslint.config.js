// @ts-check
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

// `npm run lint:eslint`. TypeScript files get typescript-eslint's type-checked recommended rules,
// with types from one program over tsconfig.eslint.json (`project`): src, test and bench together,
// so src is parsed and typed once (bench/ had its own program over bench/tsconfig.json, which typed
// the src files it reaches a second time). The project service (`projectService: true`) gave the
// same results for about 20% more CPU and 0.6 GB more memory on a cold run here (Dec 3). Every
// linted .ts file must be in tsconfig.eslint.json's `include` (src, test, bench, vitest.config.ts):
// one outside it is a parse error naming it. typescript-eslint needs TypeScript's
// JavaScript API, which the TypeScript 7 package (the native compiler) does not have: so
// package.json's `typescript` is the TypeScript team's `@typescript/typescript6` package (the 6.0
// API, what `require('typescript')` loads here), and `@typescript/native` is TypeScript 7, whose
// `tsc` is the one `npm run build` and `npm run typecheck` run (`tsc6` is 6.0's, unused). These are
// the names typescript-eslint's own experimental tsgo backend expects too (it needs TypeScript 7.1).
// The .mjs scripts and fixtures are plain Node ESM: ESLint's recommended rules only.
// `npm run lint` (scripts/lint.mjs: ESLint and Prettier side by side) keeps their caches in the
// checkout's .cache/ (git-ignored; not node_modules/.cache, which worktrees sharing one node_modules
// would share). ESLint's cache keys each file by its own content, so a type change in one file does
// not re-lint the unchanged files that use it: `rm -rf .cache/eslint` before trusting a local run
// after such a change. CI (`.ci/run`, a fresh clone with an empty cache) always lints every file.
export default defineConfig(
  globalIgnores(['dist/', 'dist-bench/', 'coverage/', 'bench/results/', '.forkpool/', '.cache/']),
  {
    files: ['**/*.{ts,cts,mts}'],
    extends: [js.configs.recommended, tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { project: ['./tsconfig.eslint.json'], tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // A leading underscore marks a binding kept on purpose: `const { stack: _stack, ...rest } = x`
      // drops a field, `(_options) =>` keeps a signature.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      // Off: `async` without `await` is deliberate here. A promise-returning method rejects, never
      // throws synchronously (STYLE.md 4), and the interfaces it implements (tool `run`,
      // `permissions.check`, Fastify plugins and handlers) return promises.
      '@typescript-eslint/require-await': 'off',
      // Passing a caught value (typed unknown) on unchanged is how a rejection is forwarded.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
      // A `let` read by a closure made before its one assignment stays `let` (as a `const`, that
      // read would throw in the temporal dead zone instead of seeing `undefined`).
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // Tests read JSON they did not type (HTTP bodies, JSONL output, the simulator's recorded
    // requests) and check it with the assertion that follows, and vitest types its asymmetric
    // matchers (`expect.any(String)`, `expect.stringMatching(…)`) as `any`: the no-unsafe-* rules
    // would flag every such line. The library's own code keeps them.
    files: ['test/**', 'bench/test/**'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    files: ['**/*.{js,mjs,cjs}'],
    extends: [js.configs.recommended],
    languageOptions: { globals: globals.node },
  },
  {
    rules: {
      // Off: the control characters in this code's regular expressions are the point of them:
      // terminal text is escaped (shared/terminal-text.ts), keys, ledger text and screenshots are
      // stripped of them, and the tests check both.
      'no-control-regex': 'off',
    },
  },
);
