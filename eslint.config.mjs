// ESLint (flat config): typescript-eslint's recommended rules without type information (fast: no type-checker pass;
// tsc already runs as its own suite), plus a few rules that catch real mistakes. No stylistic rules: the layout is
// Biome's (biome.jsonc, `npm run format`), and eslint-config-prettier, last, turns off every rule a Prettier-style
// formatter would fight — Biome prints Prettier's layout (of the rules enabled here that is no-unexpected-multiline).
// The `lint` suite (scripts/suites.mjs) runs it with ruff and pyright for the trainer.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import formatterOwnsLayout from 'eslint-config-prettier/flat';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'out/**',
      'node_modules/**',
      '.cache/**',
      '.venv/**',
      'schemas/**',
      'runs/**',
      'bench/.work/**',
      'test-results/**',
      '**/*.d.ts',
      '**/*.d.mts',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.{ts,mts,cts,js,mjs,cjs}'],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      // Node and browser globals (the extension host, scripts and webview pages); tsc checks the real types.
      globals: {
        console: 'readonly',
        process: 'readonly',
        Buffer: 'readonly',
        __dirname: 'readonly',
        __filename: 'readonly',
        require: 'readonly',
        module: 'writable',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        queueMicrotask: 'readonly',
        performance: 'readonly',
        structuredClone: 'readonly',
        URL: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        fetch: 'readonly',
        window: 'readonly',
        document: 'readonly',
        navigator: 'readonly',
        requestAnimationFrame: 'readonly',
        cancelAnimationFrame: 'readonly',
        ResizeObserver: 'readonly',
        HTMLElement: 'readonly',
        getComputedStyle: 'readonly',
        acquireVsCodeApi: 'readonly',
        globalThis: 'readonly',
        NodeJS: 'readonly',
      },
    },
    rules: {
      // `_`-prefixed parameters and variables are deliberately unused (handler signatures, destructuring).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
      // JSON-shaped data from files and the wire is typed `any` at the edges on purpose; tsc's strict mode guards the rest.
      '@typescript-eslint/no-explicit-any': 'off',
      // Lazy require() of native addons (onnxruntime-node, tokenizers) keeps them off the activation path.
      '@typescript-eslint/no-require-imports': 'off',
      // Non-null assertions are used where an invariant holds that the types cannot express.
      '@typescript-eslint/no-non-null-assertion': 'off',
      'no-undef': 'off', // tsc reports undefined names with the real types (DOM, Node, VS Code)
      // Flags defensive initialisers (`let ms = 0` before a try that assigns it): churn, not bugs.
      'no-useless-assignment': 'off',
      // Byte ranges such as /[^\x00-\x7f]/ (is this ASCII?) are deliberate.
      'no-control-regex': 'off',
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'no-var': 'error',
      'prefer-const': ['error', { destructuring: 'all' }],
      'no-throw-literal': 'error',
      'no-self-compare': 'error',
      'no-constructor-return': 'error',
    },
  },
  formatterOwnsLayout,
);
