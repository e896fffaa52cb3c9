// fetch for targets nobody vetted (web_fetch, an MCP server a channel admin added): each URL, the
// first and every redirect's, is checked against the URL rules before anything connects, and the
// address a name resolves to is checked when the socket connects (node's http/https request takes
// the DNS lookup it connects with: ours refuses disallowed addresses), so a name that resolves to a
// public address for a check and to a private one for the connection (DNS rebinding) is refused all
// the same. IP literals are checked before connecting, since a socket does not look them up. Built on
// node's own http/https rather than undici's fetch, whose package alone would overrun the function's
// bundle budget; the answer is a standard Response, for web_fetch and for the MCP SDK's transports.
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { Readable } from 'node:stream';
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
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { all: true, family: options.family ?? 0 }, (error, addresses) => {
      if (error) return callback(error, []);
      for (const { address } of addresses) {
        const refusal = addressRefusal(address, rules);
        if (refusal) return callback(new ReachRefusal(`${hostname} resolves to ${refusal}`), []);
      }
      if (options.all) return callback(null, addresses);
      const [first] = addresses;
      callback(null, first!.address, first!.family);
    });
  };
}

export interface GuardedInit {
  method?: string;
  headers?: HeadersInit;
  body?: string | null;
  signal?: AbortSignal | null;
}

/** The answer, and the URL it came from after any redirects. */
export type GuardedResponse = Response & { readonly finalUrl: string };

export interface GuardedFetch {
  (url: string | URL, init?: GuardedInit): Promise<GuardedResponse>;
}

/** Statuses whose answer has no body (the Response constructor refuses one). */
const NO_BODY = new Set([101, 103, 204, 205, 304]);

function requestOnce(url: URL, init: GuardedInit, lookup: ReturnType<typeof guardedLookup>): Promise<GuardedResponse> {
  const headers: Record<string, string> = {};
  new Headers(init.headers ?? {}).forEach((value, name) => (headers[name] = value));
  // Answers are read as sent: no compressed encodings are asked for.
  headers['accept-encoding'] = 'identity';
  const send = url.protocol === 'https:' ? https.request : http.request;
  return new Promise((resolve, reject) => {
    const request = send(
      url,
      { method: init.method ?? 'GET', headers, lookup, ...(init.signal ? { signal: init.signal } : {}) },
      (answer) => {
        const answerHeaders = new Headers();
        for (let i = 0; i + 1 < answer.rawHeaders.length; i += 2) answerHeaders.append(answer.rawHeaders[i]!, answer.rawHeaders[i + 1]!);
        const status = answer.statusCode ?? 502;
        const body = NO_BODY.has(status) || init.method === 'HEAD' ? null : (Readable.toWeb(answer) as ReadableStream<Uint8Array>);
        if (!body) answer.resume();
        const response = new Response(body, { status, statusText: answer.statusMessage ?? '', headers: answerHeaders });
        resolve(Object.assign(response, { finalUrl: url.href }));
      },
    );
    request.on('error', reject);
    request.end(init.body ?? undefined);
  });
}

/**
 * A fetch that follows up to MAX_REDIRECTS redirects itself, checking each URL against `urlRules`
 * and each address against `addressRules`; a refusal throws ReachRefusal.
 */
export function guardedFetch(urlRules: UrlRules, addressRules: AddressRules): GuardedFetch {
  const lookup = guardedLookup(addressRules);
  const check = (raw: string): URL => {
    const url = checkUrl(raw, urlRules);
    if ('refused' in url) throw new ReachRefusal(url.refused);
    const host = bareHost(url);
    const literal = isIP(host) ? addressRefusal(host, addressRules) : undefined;
    if (literal) throw new ReachRefusal(literal);
    return url;
  };
  return async (raw, init = {}) => {
    let url = check(String(raw));
    for (let hops = 0; ; hops++) {
      const response = await requestOnce(url, init, lookup);
      const location = response.headers.get('location');
      if (response.status < 300 || response.status > 399 || !location) return response;
      await response.body?.cancel();
      if (hops === MAX_REDIRECTS) throw new ReachRefusal(`more than ${MAX_REDIRECTS} redirects (rule: at most ${MAX_REDIRECTS})`);
      url = check(new URL(location, url).href);
      // A redirect that changes the method (303, or 301/302 after POST, as browsers do) drops the body.
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && init.method === 'POST')) {
        init = { ...init, method: 'GET', body: null };
      }
    }
  };
}
