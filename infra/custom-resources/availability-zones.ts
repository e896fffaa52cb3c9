// Custom resource handler (Provider framework): the names of the Availability Zones the sandbox VPC
// spans, chosen at deploy time in the deploying account, where zone names map to zone IDs.
//
//   zoneIds given   exactly those AZ IDs (the sandboxAzIds setting), in that order
//   otherwise       the first `count` zones by name whose ID is not in excludedZoneIds
//
// Returns the names as attributes Zone0, Zone1, ... (and the physical id "name,name,..."). Delete does nothing.
import { DescribeAvailabilityZonesCommand, EC2Client } from '@aws-sdk/client-ec2';
import type { CdkCustomResourceEvent, CdkCustomResourceResponse } from 'aws-lambda';

/** The custom resource's properties (CloudFormation passes numbers as strings). */
export interface AvailabilityZonesProperties {
  readonly count: string;
  readonly zoneIds?: string[];
  readonly excludedZoneIds?: string[];
}

export interface Zone {
  readonly name: string;
  readonly id: string;
}

const ec2 = new EC2Client({});

export async function handler(event: CdkCustomResourceEvent<AvailabilityZonesProperties>): Promise<CdkCustomResourceResponse> {
  if (event.RequestType === 'Delete') return { PhysicalResourceId: event.PhysicalResourceId };
  const response = await ec2.send(
    new DescribeAvailabilityZonesCommand({
      Filters: [
        { Name: 'zone-type', Values: ['availability-zone'] },
        { Name: 'state', Values: ['available'] },
      ],
    }),
  );
  const zones = (response.AvailabilityZones ?? []).flatMap((z) => (z.ZoneName && z.ZoneId ? [{ name: z.ZoneName, id: z.ZoneId }] : []));
  const names = selectZones(zones, event.ResourceProperties);
  return {
    PhysicalResourceId: names.join(','),
    Data: Object.fromEntries(names.map((name, i) => [`Zone${i}`, name])),
  };
}

/** The zone names to use, or an error that says which zones there are. */
export function selectZones(zones: readonly Zone[], properties: AvailabilityZonesProperties): string[] {
  const listed = (list: readonly Zone[]) => list.map((z) => `${z.id} (${z.name})`).join(', ') || 'none';
  if (properties.zoneIds?.length) {
    return properties.zoneIds.map((id) => {
      const zone = zones.find((z) => z.id === id);
      if (!zone) throw new Error(`sandboxAzIds: ${id} is not an available Availability Zone here; available: ${listed(zones)}`);
      return zone.name;
    });
  }
  const count = Number(properties.count);
  const excluded = new Set(properties.excludedZoneIds ?? []);
  const usable = [...zones].sort((a, b) => a.name.localeCompare(b.name)).filter((z) => !excluded.has(z.id));
  if (!Number.isInteger(count) || count < 1 || usable.length < count) {
    throw new Error(
      `need ${properties.count} Availability Zones for the sandbox, found ${usable.length} usable: ${listed(usable)}` +
        ` (skipped, as Lambda or Fargate cannot run there: ${listed(zones.filter((z) => excluded.has(z.id)))}); set sandboxAzs lower or name zones with sandboxAzIds`,
    );
  }
  return usable.slice(0, count).map((z) => z.name);
}
