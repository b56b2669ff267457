// One lint configuration for TypeScript and Svelte, type-aware (STYLE §14).
import js from '@eslint/js';
import svelte from 'eslint-plugin-svelte';
import globals from 'globals';
import ts from 'typescript-eslint';

export default ts.config(
  {
    ignores: [
      'dist/',
      'dev-dist/',
      'node_modules/',
      'bench/results/',
      '.reports/',
      'test-results/',
      'playwright-report/',
      '.scratch/',
    ],
  },
  js.configs.recommended,
  ...ts.configs.strictTypeChecked,
  ...svelte.configs.recommended,
  {
    languageOptions: {
      globals: { ...globals.browser, ...globals.node },
      parserOptions: {
        projectService: true,
        extraFileExtensions: ['.svelte'],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      '@typescript-eslint/no-confusing-void-expression': 'off',
      // Store adapters implement async interfaces with synchronous bodies.
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/unbound-method': 'off',
      '@typescript-eslint/no-unnecessary-condition': ['error', { allowConstantLoopConditions: true }],
    },
  },
  {
    files: ['workers/sw.ts'],
    languageOptions: { parserOptions: { projectService: false, project: './workers/tsconfig.sw.json' } },
  },
  {
    files: ['**/*.svelte', '**/*.svelte.ts'],
    languageOptions: { parserOptions: { parser: ts.parser } },
  },
  {
    // The protocol core is pure and isomorphic: no platform modules, no ambient clock or randomness.
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            'dexie',
            'comlink',
            'ws',
            'better-sqlite3',
            'node:*',
            'svelte',
            'svelte/*',
            // At any depth of the core (core/mls, core/parquet, …), not only its top level.
            '**/storage/**',
            '**/runtime/**',
            '**/app/**',
            '**/relay/**',
            '**/cli/**',
          ],
        },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'inject a Clock' },
        { object: 'crypto', property: 'getRandomValues', message: 'inject a Random' },
        { object: 'Math', property: 'random', message: 'inject a Random' },
      ],
      'no-restricted-globals': ['error', 'window', 'document', 'indexedDB', 'fetch', 'WebSocket', 'localStorage'],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ...ts.configs.disableTypeChecked,
  },
);
