// fetch for targets nobody vetted (web_fetch, an MCP server a channel admin added): each URL, the
// first and every redirect's, is checked against the URL rules before anything connects, and the
// address a name resolves to is checked when the socket connects (undici's connector is given a DNS
// lookup that refuses disallowed addresses), so a name that resolves to a public address for a check
// and to a private one for the connection (DNS rebinding) is refused all the same. IP literals are
// checked before connecting, since a socket does not look them up.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, fetch as undiciFetch, type RequestInit, type Response } from 'undici';
import { ToolError } from '../tools/text.ts';
import { type AddressRules, addressRefusal } from './address-rules.ts';
import { bareHost, checkUrl, type UrlRules } from './url-rules.ts';

/** A request refused by a rule, before it connected: the message names the rule. */
export class ReachRefusal extends ToolError {
  override name = 'ReachRefusal';
}

export const MAX_REDIRECTS = 5;

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A DNS lookup that answers only with addresses the rules allow, and fails naming the rule otherwise. */
function guardedLookup(rules: AddressRules) {
  return (hostname: string, options: { all?: boolean; family?: number }, callback: LookupCallback): void => {
    dnsLookup(hostname, { all: true, family: options.family ?? 0 }, (error, addresses) => {
      if (error) return callback(error, []);
      for (const { address } of addresses) {
        const refusal = addressRefusal(address, rules);
        if (refusal) return callback(Object.assign(new ReachRefusal(`${hostname} resolves to ${refusal}`), { code: 'EREACHREFUSED' }), []);
      }
      if (options.all) return callback(null, addresses);
      const [first] = addresses;
      callback(null, first!.address, first!.family);
    });
  };
}

/** The refusal inside undici's "fetch failed" TypeError, when a rule refused the connection. */
function refusalIn(error: unknown): ReachRefusal | undefined {
  for (let at: unknown = error; at instanceof Error; at = at.cause) if (at instanceof ReachRefusal) return at;
  return undefined;
}

export interface GuardedFetch {
  (url: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

/**
 * A fetch that follows up to MAX_REDIRECTS redirects itself, checking each URL against `urlRules`
 * and each address against `addressRules`; a refusal throws ReachRefusal.
 */
export function guardedFetch(urlRules: UrlRules, addressRules: AddressRules): GuardedFetch {
  const agent = new Agent({ connect: { lookup: guardedLookup(addressRules) as never } });
  const check = (raw: string): URL => {
    const url = checkUrl(raw, urlRules);
    if ('refused' in url) throw new ReachRefusal(url.refused);
    const host = bareHost(url);
    const literal = isIP(host) ? addressRefusal(host, addressRules) : undefined;
    if (literal) throw new ReachRefusal(literal);
    return url;
  };
  const fetchOnce = async (url: URL, init: RequestInit | undefined): Promise<Response> => {
    try {
      return await undiciFetch(url, { ...init, redirect: 'manual', dispatcher: agent });
    } catch (error) {
      throw refusalIn(error) ?? error;
    }
  };
  const guarded = async (raw: string, init?: RequestInit): Promise<Response> => {
    let url = check(raw);
    for (let hops = 0; ; hops++) {
      const response = await fetchOnce(url, init);
      const location = response.headers.get('location');
      if (response.status < 300 || response.status > 399 || !location) return response;
      await response.body?.cancel();
      if (hops === MAX_REDIRECTS) throw new ReachRefusal(`more than ${MAX_REDIRECTS} redirects (rule: at most ${MAX_REDIRECTS})`);
      url = check(new URL(location, url).href);
      // A redirect that changes the method (303, or 301/302 after POST, as browsers do) drops the body.
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && init?.method === 'POST')) {
        init = { ...init, method: 'GET', body: undefined };
      }
    }
  };
  return Object.assign(guarded, { close: () => agent.close() });
}
