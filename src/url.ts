/**
 * Connection URLs: the scheme names a backend of the registry, whose descriptor parses the rest.
 * Credentials in the URL are refused (they would end up in logs), except where a backend takes them
 * (postgres and redis URLs, where they are usual): their password is never shown.
 */
import { InvalidArgumentError } from '../recipes/errors.js';
import type { Backend, ParsedUrl } from './backends/backend.js';
import { backendForScheme, BACKENDS } from './backends/registry.js';
import { redactUrl, splitUrl } from './backends/url-forms.js';

export type { ParsedUrl } from './backends/backend.js';
export { redactUrl } from './backends/url-forms.js';

/** Every backend's URL form, for the error a bad URL gets. */
const EXPECTED = listed(BACKENDS.map((backend) => backend.urlForm));
const SCHEMES = listed(BACKENDS.flatMap((backend) => backend.schemes.map((scheme) => `${scheme}:`)));

/** Parses a connection URL with the descriptor of the backend its scheme names. */
export function parseUrl(url: unknown): ParsedUrl {
  return resolveUrl(url).parsed;
}

/** The backend a connection URL names, and the URL as that backend parsed it. */
export function resolveUrl(url: unknown): { backend: Backend; parsed: ParsedUrl } {
  if (typeof url !== 'string') throw new InvalidArgumentError('url', url, EXPECTED);
  const trimmed = url.trim();
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(trimmed)?.[1];
  const backend = scheme === undefined ? undefined : backendForScheme(scheme);
  if (backend !== undefined) return { backend, parsed: backend.parseUrl(trimmed, EXPECTED) };
  const parts = splitUrl(trimmed);
  if (parts === undefined) throw new InvalidArgumentError('url', redactUrl(url), EXPECTED);
  throw new InvalidArgumentError('url scheme', `${parts.scheme}:`, SCHEMES);
}

/** `a, b or c`. */
function listed(words: readonly string[]): string {
  return words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)!}`;
}
