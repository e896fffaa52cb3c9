import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'cdk.out/', 'coverage/'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
      // zod's `z` export is an object holding every locale of its error messages (~260 KB minified):
      // importing it puts them all in each Lambda bundle, where the namespace import keeps only what is used.
      'no-restricted-syntax': [
        'error',
        {
          selector: "ImportDeclaration[source.value='zod'][importKind!='type'] > ImportSpecifier[imported.name='z'][importKind!='type']",
          message: "Use `import * as z from 'zod'`.",
        },
      ],
    },
  },
  {
    // The product (what deploys) never reaches into the local cloud or the tests: that boundary is
    // what keeps local stand-ins out of the Lambda bundles.
    files: ['shared/**', 'functions/**', 'infra/**', 'containers/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/packages/**', '@threadwork/local-cloud', '@threadwork/local-cloud/**'],
              message: 'Product code must not import the local cloud.',
            },
            { group: ['**/test/**', '**/bench/**'], message: 'Product code must not import tests or the bench.' },
          ],
        },
      ],
    },
  },
);
