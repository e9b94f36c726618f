// @ts-check
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

// `npm run lint:eslint`. TypeScript files get typescript-eslint's type-checked recommended rules,
// with types from the project service (tsconfig.json). typescript-eslint needs TypeScript's
// JavaScript API, which the TypeScript 7 package (the native compiler) does not have: so
// package.json's `typescript` is the TypeScript team's `@typescript/typescript6` package (the 6.0
// API, what `require('typescript')` loads here), and `@typescript/native` is TypeScript 7, whose
// `tsc` is the one `npm run build` and `npm run typecheck` run (`tsc6` is 6.0's, unused). These are
// the names typescript-eslint's own experimental tsgo backend expects too (it needs TypeScript 7.1).
// The .mjs scripts and fixtures are plain Node ESM: ESLint's recommended rules only.
export default defineConfig(
  globalIgnores(['dist/', 'coverage/', 'bench/results/', '.forkpool/']),
  {
    files: ['**/*.{ts,cts,mts}'],
    extends: [js.configs.recommended, tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // A leading underscore marks a binding kept on purpose: `const { stack: _stack, ...rest } = x`
      // drops a field, `(_options) =>` keeps a signature.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
    },
  },
  {
    files: ['**/*.{js,mjs,cjs}'],
    extends: [js.configs.recommended],
    languageOptions: { globals: globals.node },
  },
);
