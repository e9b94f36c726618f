/**
 * A key for a public model endpoint. A request with no key to a provider's URL is refused up
 * front, in one line, instead of being sent and failing as a 401 (or, worse, being booked as a
 * paid model while something else answers). Endpoints of one's own stay keyless: loopback,
 * private networks, single-label and `.local`/`.lan`/`.internal` names, and the reserved
 * `.test`/`.example`/`.invalid` names that never reach a provider.
 */
import { isIP } from 'node:net';
import { ConfigError } from './errors.js';

const OWN_SUFFIXES = ['.localhost', '.local', '.lan', '.internal', '.home.arpa', '.test', '.example', '.invalid'];

/** True for a host a provider never sits on: this machine, a private network, a local or reserved name. */
export function isOwnNetworkHost(host: string): boolean {
  const h = host
    .replace(/^\[|\]$/g, '')
    .toLowerCase()
    .replace(/\.$/, '');
  if (h === 'localhost' || OWN_SUFFIXES.some((suffix) => h.endsWith(suffix))) return true;
  if (isIP(h) === 4) {
    const [a = 0, b = 0] = h.split('.').map(Number);
    return a === 127 || a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 169 && b === 254) || a === 0;
  }
  if (isIP(h) === 6) {
    const short = new URL(`http://[${h}]/`).hostname.slice(1, -1);
    return short === '::1' || short.startsWith('::ffff:7f') || /^f[cd]/.test(short) || /^fe[89ab]/.test(short);
  }
  // A name without a dot (`gpu-box`) resolves on the local network only.
  return !h.includes('.');
}

/** The environment variable a key for an endpoint speaking `api` comes from (provider-keys.ts). */
export function keyVariableFor(api: string | undefined): string {
  return api === 'anthropic' ? 'ANTHROPIC_API_KEY' : 'OPENAI_API_KEY';
}

/**
 * Throws a one-line {@link ConfigError} on `field` when `baseUrl` is a public endpoint and no
 * key is set; it names the variable of the endpoint's wire (`api`).
 */
export function assertKeyForEndpoint(baseUrl: string, apiKey: string | undefined, field = 'apiKey', api?: string): void {
  if (apiKey !== undefined || !URL.canParse(baseUrl)) return;
  const url = new URL(baseUrl);
  if (isOwnNetworkHost(url.hostname)) return;
  throw new ConfigError([
    {
      field,
      expected: `an API key for ${url.origin} (set ${keyVariableFor(api)} or the config's apiKey; for a keyless server of your own, any placeholder)`,
      received: 'no key: the request would be refused (401)',
    },
  ]);
}
