// cdk.json context `hookFunctions`: the agent-step role may invoke exactly the declared operator
// functions (lambda hooks' targets), no other role may invoke them, and the local IAM, reading the
// same template, refuses an undeclared one as AWS would. The context key is validated.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { synthesizeLocalStack } from '../../packages/local-cloud/src/cloud/synth.ts';
import { createLocalIam } from '../../packages/local-cloud/src/iam/index.ts';
import { checkContextKeys, ContextError, deploymentSettingsSchema } from '../../infra/settings.ts';

const DECLARED = ['arn:aws:lambda:local:000000000000:function:org-policy', 'arn:aws:lambda:local:000000000000:function:dlp-scan:live'];
const UNDECLARED = 'arn:aws:lambda:local:000000000000:function:someone-elses';

const list = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

/** Every (role, resource) a template's policies allow lambda:InvokeFunction on, outside the state machine's own steps. */
async function hookGrants(hookFunctions: string[]) {
  const { template, logicalIds } = await synthesizeLocalStack(hookFunctions.length ? { hookFunctions } : {});
  const grants: string[] = [];
  for (const [id, resource] of Object.entries(template.Resources)) {
    if (resource.Type !== 'AWS::IAM::Policy') continue;
    for (const statement of list(resource.Properties.PolicyDocument.Statement) as { Action: string | string[]; Resource: unknown }[]) {
      if (!list(statement.Action).includes('lambda:InvokeFunction')) continue;
      for (const arn of list(statement.Resource))
        if (typeof arn === 'string') grants.push(`${list(resource.Properties.Roles)[0]?.Ref ?? id} ${arn}`);
    }
  }
  const agentRole = String(template.Resources[logicalIds.agentStep!]!.Properties.Role['Fn::GetAtt'][0]);
  return { template, logicalIds, grants, agentRole };
}

test('hookFunctions: the agent-step role may invoke exactly the declared ARNs, no other role any; the local IAM refuses an undeclared one', async () => {
  const { template, logicalIds, grants, agentRole } = await hookGrants(DECLARED);
  assert.deepEqual(grants.sort(), DECLARED.map((arn) => `${agentRole} ${arn}`).sort());
  assert.equal(template.Resources[logicalIds.agentStep!]!.Properties.Environment.Variables.HOOK_FUNCTIONS, DECLARED.join(','));
  const iam = createLocalIam(template);
  const role = { role: iam.roleOf(logicalIds.agentStep!)! };
  for (const arn of DECLARED) assert.ok((await iam.authorize(role, { action: 'lambda:InvokeFunction', resource: arn })).allowed, arn);
  assert.equal((await iam.authorize(role, { action: 'lambda:InvokeFunction', resource: UNDECLARED })).allowed, false);
  const sandboxRole = { role: iam.roleOf(logicalIds.sandboxStep!)! };
  assert.equal((await iam.authorize(sandboxRole, { action: 'lambda:InvokeFunction', resource: DECLARED[0]! })).allowed, false);
});

test('hookFunctions: none declared (the default) grants no invoke and sets no variable', async () => {
  const { template, logicalIds, grants } = await hookGrants([]);
  assert.deepEqual(grants, []);
  assert.equal(template.Resources[logicalIds.agentStep!]!.Properties.Environment.Variables.HOOK_FUNCTIONS, undefined);
});

test('hookFunctions: a list of function ARNs (or comma-separated with -c), checked; a near miss of the key is named', () => {
  assert.deepEqual(deploymentSettingsSchema.parse({ hookFunctions: DECLARED.join(',') }).hookFunctions, DECLARED);
  assert.deepEqual(deploymentSettingsSchema.parse({}).hookFunctions, []);
  const bad = deploymentSettingsSchema.safeParse({ hookFunctions: ['arn:aws:s3:::bucket'] });
  assert.equal(bad.success, false);
  assert.match(JSON.stringify(bad.error?.issues), /Lambda function ARNs/);
  assert.equal(deploymentSettingsSchema.safeParse({ hookFunctions: [DECLARED[0], DECLARED[0]] }).success, false);
  assert.throws(
    () => checkContextKeys({ hookFunction: [] }),
    (error: Error) => error instanceof ContextError && /did you mean hookFunctions\?/.test(error.message),
  );
});
