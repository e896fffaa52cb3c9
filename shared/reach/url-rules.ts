// What a URL must be before anything connects to it: http or https, no user name or password in it,
// port 80 or 443 unless the allow list names the port, and (for web_fetch) a host the allow list
// names. Checked for the first URL and again for every redirect.

export interface UrlRules {
  /** settings.json `webFetch.allow` as the run began: hosts, `*.example.com` for its subdomains, `*` for every public host, `host:port` for another port. */
  allow: readonly string[];
}

const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443 };

/** The URL's port, the scheme's default when it names none. */
export const portOf = (url: URL): number => (url.port ? Number(url.port) : DEFAULT_PORTS[url.protocol]!);

/** The host without IPv6 brackets (URL keeps them on `hostname`). */
export const bareHost = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, '$1');

function hostMatches(pattern: string, host: string): boolean {
  if (pattern === '*') return true;
  if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1;
  return host === pattern;
}

/** Whether `entry` (an allow-list entry, perhaps `host:port`) admits the host on the port. */
function admits(entry: string, host: string, port: number, defaultPort: boolean): boolean {
  const withPort = /^(.*):(\d{1,5})$/.exec(entry.toLowerCase());
  if (withPort) return Number(withPort[2]) === port && hostMatches(withPort[1]!, host);
  return defaultPort && hostMatches(entry.toLowerCase(), host);
}

/** The URL, parsed, or the rule it breaks (before any connection). */
export function checkUrl(raw: string, rules: UrlRules): URL | { refused: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { refused: `${JSON.stringify(raw.slice(0, 200))} is not a URL` };
  }
  if (!(url.protocol in DEFAULT_PORTS)) return { refused: `${url.protocol} URLs are refused (rule: only http and https)` };
  if (url.username || url.password) return { refused: 'a URL with a user name or password is refused (rule: no credentials in URLs)' };
  const host = bareHost(url).toLowerCase();
  const port = portOf(url);
  const defaultPort = port === 80 || port === 443;
  if (rules.allow.some((entry) => admits(entry, host, port, defaultPort))) return url;
  if (!defaultPort && rules.allow.some((entry) => admits(entry, host, 80, true))) {
    return { refused: `port ${port} of ${host} is refused (rule: only ports 80 and 443, unless webFetch.allow names ${host}:${port})` };
  }
  return { refused: `${host} is not in this channel's webFetch.allow in settings.json (rule: allowed hosts only)` };
}
