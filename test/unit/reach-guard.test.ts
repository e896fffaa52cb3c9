// The SSRF guard of web_fetch and of channel MCP servers: address classification, URL rules, and the
// guarded fetch against a real HTTP server on this machine, where a name that resolves to a refused
// address is refused when the socket connects (the DNS lookup the connection uses is the checked one).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { addressRefusal } from '../../shared/reach/address-rules.ts';
import { checkUrl } from '../../shared/reach/url-rules.ts';
import { guardedFetch, ReachRefusal } from '../../shared/reach/guarded-fetch.ts';

let server: Server;
let port: number;
let hits = 0;
before(async () => {
  server = createServer((request, response) => {
    hits++;
    const to = new URL(request.url!, 'http://x').searchParams.get('to');
    if (to) response.writeHead(302, { location: to }).end();
    else response.writeHead(200, { 'content-type': 'text/plain' }).end('hello');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
after(() => server.close());

test('addresses: only public unicast passes; private, loopback, link-local (metadata), CGNAT, unspecified and mapped forms are refused by name', () => {
  const rules = { allowLoopback: false };
  for (const ok of ['8.8.8.8', '93.184.216.34', '2606:4700:4700::1111']) assert.equal(addressRefusal(ok, rules), undefined, ok);
  const refused: Record<string, RegExp> = {
    '10.1.2.3': /private/,
    '172.16.0.1': /private/,
    '192.168.1.1': /private/,
    'fd00:ec2::254': /private/,
    '127.0.0.1': /loopback/,
    '::1': /loopback/,
    '169.254.169.254': /link-local .*metadata/,
    'fe80::1': /link-local/,
    '100.100.100.200': /carrier-grade NAT/,
    '0.0.0.0': /unspecified/,
    '::ffff:10.0.0.1': /10\.0\.0\.1 is a private/,
    '::ffff:127.0.0.1': /loopback/,
  };
  for (const [address, rule] of Object.entries(refused)) {
    const refusal = addressRefusal(address, rules);
    assert.match(refusal ?? '', rule, address);
    assert.match(refusal ?? '', /rule: no private, loopback, link-local or metadata addresses/, address);
  }
  assert.equal(addressRefusal('127.0.0.1', { allowLoopback: true }), undefined, 'loopback only when allowed');
  assert.match(addressRefusal('10.0.0.1', { allowLoopback: true }) ?? '', /private/, 'allowing loopback allows nothing else');
});

test('URLs: schemes, credentials, ports and hosts are checked against the allow list, naming the rule', () => {
  const allow = { allow: ['docs.example.com', '*.github.com', 'api.example.com:8443'] };
  const refusal = (url: string) => {
    const checked = checkUrl(url, allow);
    return 'refused' in checked ? checked.refused : undefined;
  };
  assert.equal(refusal('https://docs.example.com/a'), undefined);
  assert.equal(refusal('https://raw.github.com/x'), undefined);
  assert.equal(refusal('https://api.example.com:8443/v1'), undefined);
  assert.match(refusal('https://github.com/x')!, /not in this channel's webFetch.allow/, '*.github.com is subdomains only');
  assert.match(refusal('https://evilgithub.com/x')!, /not in this channel's webFetch.allow/);
  assert.match(refusal('file:///etc/passwd')!, /rule: only http and https/);
  assert.match(refusal('gopher://docs.example.com/')!, /rule: only http and https/);
  assert.match(refusal('https://user:pw@docs.example.com/')!, /rule: no credentials in URLs/);
  assert.match(refusal('https://docs.example.com:22/')!, /port 22 .*rule: only ports 80 and 443/);
  assert.match(refusal('not a url')!, /is not a URL/);
  assert.equal('refused' in checkUrl('https://anything.example.org/', { allow: ['*'] }), false, '* allows any host');
});

test('guarded fetch: a name resolving to loopback is refused at connect time; IP literals before connecting; every redirect is checked', async () => {
  const local = `localhost:${port}`;
  const strict = guardedFetch({ allow: [local, `127.0.0.1:${port}`] }, { allowLoopback: false });
  const before = hits;
  await assert.rejects(strict(`http://${local}/`), (error: unknown) => {
    assert.ok(error instanceof ReachRefusal, String(error));
    assert.match(error.message, /localhost resolves to 127\.0\.0\.1 is a loopback address/);
    return true;
  });
  await assert.rejects(strict(`http://127.0.0.1:${port}/`), /127\.0\.0\.1 is a loopback address/);
  assert.equal(hits, before, 'nothing reached the server');

  const loopbackAllowed = guardedFetch({ allow: [`127.0.0.1:${port}`] }, { allowLoopback: true });
  assert.equal(await (await loopbackAllowed(`http://127.0.0.1:${port}/`)).text(), 'hello');
  const redirect = (to: string) => `http://127.0.0.1:${port}/?to=${encodeURIComponent(to)}`;
  // Every public host allowed: the address rules still hold, on the redirect too.
  const wide = guardedFetch({ allow: ['*', `127.0.0.1:${port}`] }, { allowLoopback: true });
  await assert.rejects(wide(redirect('http://169.254.169.254/latest/meta-data/')), /link-local .*metadata/);
  await assert.rejects(wide(redirect('http://10.0.0.7/')), /10\.0\.0\.7 is a private address/);
  await assert.rejects(wide(redirect('http://[::ffff:a9fe:a9fe]/')), /::ffff:a9fe:a9fe is a link-local/);
  await assert.rejects(loopbackAllowed(redirect('https://elsewhere.example.com/')), /not in this channel's webFetch.allow/);
  await assert.rejects(loopbackAllowed(redirect('file:///etc/passwd')), /rule: only http and https/);
  // A redirect loop on the allowed server ends at the limit.
  let chain = `http://127.0.0.1:${port}/`;
  for (let i = 0; i < 7; i++) chain = redirect(chain);
  await assert.rejects(loopbackAllowed(chain), /more than 5 redirects/);
});
