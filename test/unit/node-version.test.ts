// The tests, the bench and the local stack run on the Lambdas' Node.js major version: the `node`
// dev dependency puts a Node 22 binary first on every npm script's PATH.
import assert from 'node:assert/strict';
import { test } from 'node:test';

test('scripts run on Node.js 22, the Lambda runtime', () => {
  assert.equal(Number(process.versions.node.split('.')[0]), 22, `running on Node ${process.versions.node}`);
});
