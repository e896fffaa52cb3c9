import tseslint from 'typescript-eslint';

export default tseslint.config({ ignores: ['node_modules/', 'cdk.out/', 'coverage/'] }, ...tseslint.configs.recommended, {
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
});
