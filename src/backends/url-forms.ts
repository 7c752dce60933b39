/** The pieces of URL parsing that several backends share: host lists, namespaces, redaction. */
import { InvalidArgumentError } from '../../recipes/errors.js';
import { validateName } from '../../recipes/validate.js';

/** The namespace of a URL that names none. */
export const DEFAULT_NAMESPACE = 'baton';

const FORM = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)(\/[^?#]*)?$/i;

/** A `scheme://authority/path` URL split up; undefined if it is not of that form. */
export function splitUrl(url: string): { scheme: string; authority: string; path: string } | undefined {
  const match = FORM.exec(url);
  if (match === null) return undefined;
  const [, scheme = '', authority = '', path = ''] = match;
  return { scheme, authority, path };
}

/**
 * `scheme://host:port[,host:port...][/namespace]`, with no credentials (they would end up in logs):
 * the hosts, checked, and the namespace.
 */
export function parseHostList(url: string, expected: string): { hosts: string[]; namespace: string; path: string } {
  const { authority, path } = splitWithoutCredentials(url, expected);
  const hosts = authority.split(',').map((host) => host.trim());
  for (const host of hosts) validateHost(host, url);
  return { hosts, namespace: parseNamespace(path), path };
}

/** A `scheme://authority/path` URL whose authority holds no credentials. */
export function splitWithoutCredentials(url: string, expected: string): { authority: string; path: string } {
  const parts = splitUrl(url);
  if (parts === undefined) throw new InvalidArgumentError('url', redactUrl(url), expected);
  if (parts.authority.includes('@')) {
    throw new InvalidArgumentError(
      'url',
      `${parts.scheme}://…@…`,
      'no credentials in the URL; pass them as connect() options',
    );
  }
  return parts;
}

/** `host:port` with a port from 1 to 65535 (an IPv6 address in brackets). */
export function validateHost(host: string, url: string, what = `host ${JSON.stringify(host)} in url`): void {
  const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(host);
  const port = Number(match?.[2]);
  if (match === null || port < 1 || port > 65_535) {
    throw new InvalidArgumentError(what, url, 'host:port with a port from 1 to 65535');
  }
}

/** The namespace of a URL's path: its segments without leading or trailing `/`, checked. */
export function parseNamespace(path: string): string {
  const trimmed = path.replace(/^\/+/, '').replace(/\/+$/, '');
  return trimmed === '' ? DEFAULT_NAMESPACE : checkNamespace(trimmed, 'url namespace', path);
}

/** `segments` if they make a valid namespace; else an `InvalidArgumentError` about `what`, showing `given`. */
export function checkNamespace(segments: string, what: string, given: string = segments): string {
  try {
    return validateName(segments);
  } catch (error) {
    throw new InvalidArgumentError(what, given, `path segments of [A-Za-z0-9._-] (${(error as Error).message})`);
  }
}

/**
 * A URL as it may be shown: if it holds an `@`, everything from `://` (or the scheme's colon) to its
 * LAST `@` is replaced, as the userinfo ends at the last `@` (a password may hold `@`, `/`, `?` or `#`
 * unencoded, and no namespace or database holds an `@`).
 */
export function redactUrl(url: string): string {
  const at = url.lastIndexOf('@');
  if (at < 0) return url;
  const scheme = /^[a-z][a-z0-9+.-]*:(?:\/\/)?/i.exec(url)?.[0].length ?? 0;
  return `${url.slice(0, scheme)}(not shown)${url.slice(at)}`;
}

/**
 * The URL with any password replaced, for messages. Everything between `://` and the last `@` is the
 * user and password (a password may hold `/`, `?`, `#` or `@`): only the user before the first `:` is
 * kept. A URL that does not parse is shown as its scheme only when it may hold credentials.
 */
export function hidePassword(url: string): string {
  const scheme = /^([a-z][a-z0-9+.-]*:)/i.exec(url)?.[1] ?? '';
  let shown = url;
  const at = url.lastIndexOf('@');
  if (scheme !== '' && url.startsWith('//', scheme.length) && at > scheme.length + 2) {
    const credentials = url.slice(scheme.length + 2, at);
    const colon = credentials.indexOf(':');
    shown = `${scheme}//${colon < 0 ? credentials : `${credentials.slice(0, colon)}:***`}${url.slice(at)}`;
  }
  return shown.replace(/([?&]password=)[^&#]*/gi, '$1***');
}
