// The sandbox VPC's Availability Zones: chosen at deploy time by a custom resource that skips zone IDs
// where Lambda or Fargate cannot run, or named by the sandboxAzIds setting; and its handler's choice.
import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import { DescribeAvailabilityZonesCommand, EC2Client } from '@aws-sdk/client-ec2';
import type { CdkCustomResourceEvent } from 'aws-lambda';
import { UNSUPPORTED_SANDBOX_AZ_IDS } from '../../infra/constructs/sandbox-availability-zones.ts';
import { type AvailabilityZonesProperties, handler, selectZones } from '../../infra/custom-resources/availability-zones.ts';
import { logicalId, synth } from './synth.ts';

type Resource = { Type: string; Properties: Record<string, unknown> };
const list = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

function subnetsAndLookup(settings: Record<string, unknown>) {
  const { stack, template } = synth({ settings });
  const resources = Object.values(template.toJSON().Resources as Record<string, Resource>);
  const lookupId = logicalId(stack, stack.sandbox.availabilityZones.lookup.node.defaultChild!);
  const lookup = (template.toJSON().Resources as Record<string, Resource>)[lookupId]!;
  const zones = resources.filter((r) => r.Type === 'AWS::EC2::Subnet').map((r) => r.Properties.AvailabilityZone);
  const endpoints = resources.filter((r) => r.Type === 'AWS::EC2::VPCEndpoint' && r.Properties.VpcEndpointType === 'Interface');
  return { lookupId, lookup, zones, endpoints, stack };
}

test('the subnets (and interface endpoints) are in the zones the deploy-time lookup returns, skipping unsupported zone IDs', () => {
  for (const azs of [1, 2, 3]) {
    const { lookupId, lookup, zones, endpoints } = subnetsAndLookup({ sandboxAzs: String(azs) });
    assert.equal(lookup.Type, 'Custom::SandboxAvailabilityZones');
    const { ServiceToken: _token, ...properties } = lookup.Properties;
    assert.deepEqual(properties, { count: String(azs), excludedZoneIds: [...UNSUPPORTED_SANDBOX_AZ_IDS] });
    assert.deepEqual(
      zones,
      Array.from({ length: azs }, (_, i) => ({ 'Fn::GetAtt': [lookupId, `Zone${i}`] })),
    );
    assert.equal(endpoints.length, 3);
    for (const e of endpoints) assert.equal(list(e.Properties.SubnetIds).length, azs);
  }
  assert.ok(UNSUPPORTED_SANDBOX_AZ_IDS.includes('use1-az3'), 'the AZ Lambda rejects in us-east-1');
});

test('sandboxAzIds: the lookup maps exactly those AZ IDs to names, and sets the count', () => {
  const { lookupId, lookup, zones } = subnetsAndLookup({ sandboxAzIds: 'use1-az4,use1-az6', sandboxAzs: 1 });
  const { ServiceToken: _token, ...properties } = lookup.Properties;
  assert.deepEqual(properties, { count: '2', zoneIds: ['use1-az4', 'use1-az6'] });
  assert.deepEqual(zones, [{ 'Fn::GetAtt': [lookupId, 'Zone0'] }, { 'Fn::GetAtt': [lookupId, 'Zone1'] }]);
});

test('the lookup function may only describe Availability Zones (and write its logs and traces)', () => {
  const { stack, template } = synth();
  const roleId = logicalId(stack, stack.sandbox.availabilityZones.handler.role!);
  const actions = Object.values(template.findResources('AWS::IAM::Policy') as Record<string, Resource>)
    .filter((p) => JSON.stringify(p.Properties.Roles) === JSON.stringify([{ Ref: roleId }]))
    .flatMap((p) =>
      (p.Properties.PolicyDocument as { Statement: { Action: string | string[] }[] }).Statement.flatMap((s) => list(s.Action)),
    );
  assert.deepEqual(
    actions.filter((a) => !a.startsWith('xray:') && !a.startsWith('logs:')),
    ['ec2:DescribeAvailabilityZones'],
  );
});

const ZONES = [
  { name: 'us-east-1c', id: 'use1-az1' },
  { name: 'us-east-1a', id: 'use1-az3' },
  { name: 'us-east-1b', id: 'use1-az6' },
  { name: 'us-east-1d', id: 'use1-az2' },
];
const EXCLUDED = [...UNSUPPORTED_SANDBOX_AZ_IDS];

test('choice: the first zones by name whose ID is supported', () => {
  assert.deepEqual(selectZones(ZONES, { count: '1', excludedZoneIds: EXCLUDED }), ['us-east-1b']);
  assert.deepEqual(selectZones(ZONES, { count: '3', excludedZoneIds: EXCLUDED }), ['us-east-1b', 'us-east-1c', 'us-east-1d']);
  assert.throws(
    () => selectZones(ZONES, { count: '4', excludedZoneIds: EXCLUDED }),
    /need 4 Availability Zones for the sandbox, found 3 usable: .*skipped, as Lambda or Fargate cannot run there: use1-az3 \(us-east-1a\)/,
  );
});

test("choice: named AZ IDs map to this account's names, in the given order; an unknown ID fails with the ones there are", () => {
  assert.deepEqual(selectZones(ZONES, { count: '2', zoneIds: ['use1-az2', 'use1-az3'] }), ['us-east-1d', 'us-east-1a']);
  assert.throws(
    () => selectZones(ZONES, { count: '1', zoneIds: ['use1-az9'] }),
    /sandboxAzIds: use1-az9 is not an available Availability Zone here; available: use1-az1 \(us-east-1c\)/,
  );
});

test('handler: asks EC2 for available zones, returns Zone0.. and the names as physical id; Delete asks nothing', async () => {
  const send = mock.method(EC2Client.prototype, 'send', async () => ({
    AvailabilityZones: ZONES.map((z) => ({ ZoneName: z.name, ZoneId: z.id })),
  }));
  try {
    const properties: AvailabilityZonesProperties = { count: '2', excludedZoneIds: EXCLUDED };
    const event = {
      RequestType: 'Create',
      ResourceProperties: { ServiceToken: 'arn', ...properties },
    } as unknown as CdkCustomResourceEvent<AvailabilityZonesProperties>;
    assert.deepEqual(await handler(event), {
      PhysicalResourceId: 'us-east-1b,us-east-1c',
      Data: { Zone0: 'us-east-1b', Zone1: 'us-east-1c' },
    });
    const command = send.mock.calls[0]!.arguments[0] as unknown as DescribeAvailabilityZonesCommand;
    assert.ok(command instanceof DescribeAvailabilityZonesCommand);
    assert.deepEqual(command.input.Filters, [
      { Name: 'zone-type', Values: ['availability-zone'] },
      { Name: 'state', Values: ['available'] },
    ]);
    const deleted = await handler({
      RequestType: 'Delete',
      PhysicalResourceId: 'us-east-1b',
    } as unknown as CdkCustomResourceEvent<AvailabilityZonesProperties>);
    assert.deepEqual(deleted, { PhysicalResourceId: 'us-east-1b' });
    assert.equal(send.mock.callCount(), 1);
  } finally {
    send.mock.restore();
  }
});
