// Which addresses web_fetch (and an MCP server a channel admin added) may connect to: public unicast
// only. Private, loopback, link-local (where cloud metadata services answer), carrier-grade NAT,
// multicast, reserved and address-translation ranges are refused. The ranges are ipaddr.js's, a
// maintained classifier, rather than a hand-kept list. The check runs on the address a name resolved
// to, at connect time (shared/reach/guarded-fetch.ts), so DNS rebinding and redirects are covered.
import ipaddr from 'ipaddr.js';

/** What each refused range is called in a refusal, so the model and the operator can read the rule. */
const RANGE_NAMES: Record<string, string> = {
  private: 'a private address',
  uniqueLocal: 'a private address',
  loopback: 'a loopback address',
  linkLocal: 'a link-local address (where cloud metadata services answer)',
  carrierGradeNat: 'a carrier-grade NAT address',
  unspecified: 'the unspecified address',
  broadcast: 'a broadcast address',
  multicast: 'a multicast address',
};

export interface AddressRules {
  /** Loopback allowed: local testing only (the reach function's REACH_ALLOW_LOOPBACK, off by default). */
  allowLoopback: boolean;
}

/** Why a connection to `address` (an IP literal) is refused, or undefined when it is a public unicast address. */
export function addressRefusal(address: string, rules: AddressRules): string | undefined {
  if (!ipaddr.isValid(address)) return `${address} is not an IP address`;
  let parsed = ipaddr.parse(address);
  // An IPv4 address written as IPv6 (::ffff:10.0.0.1) is judged as the IPv4 address it is.
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  const range = parsed.range();
  if (range === 'unicast') return undefined;
  if (range === 'loopback' && rules.allowLoopback) return undefined;
  const what = RANGE_NAMES[range] ?? `a reserved or translated address (${range})`;
  return `${address} is ${what}; only public addresses may be reached (rule: no private, loopback, link-local or metadata addresses)`;
}
