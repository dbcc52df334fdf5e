// ESLint flat config: typescript-eslint recommended (type-aware), plus the workflow sandbox rules
// (docs/architecture.md §3): workflows stay deterministic, so no Node built-ins and no value imports
// from activities, models, lib or api.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      'dist/**',
      'console/dist/**',
      'console/dist.*/**',
      'console/src/api/schema.d.ts',
      '.tools/**',
      '.data/**',
      'coverage/**',
      'tools/**',
      '.ci/**',
    ],
  },
  js.configs.recommended,
  {
    files: ['**/*.js'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: { sourceType: 'module', globals: { process: 'readonly' } },
  },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'object-shorthand': 'error',
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: builtinModules.flatMap((m) => [m, `node:${m}`]).filter((m) => m !== 'assert'),
          patterns: [
            {
              group: ['../activities*', '../models*', '../lib*', '../api*', '../commands*'],
              allowTypeImports: true,
              message: 'Workflows may import only types from activities/models/lib/api (deterministic sandbox).',
            },
          ],
        },
      ],
    },
  }
);
