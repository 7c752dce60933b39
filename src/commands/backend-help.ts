/** The lines of the `baton` help that speak of the backends, made from their descriptors. */
import { BACKENDS } from '../backends/registry.js';

/** `a, b or c` (`and` instead of `or` when asked). */
export function listed(words: readonly string[], and = 'or'): string {
  return words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} ${and} ${words.at(-1)!}`;
}

/** Example URLs of the backends that give one, with `namespace` in them. */
export function urlExamples(namespace: string): string {
  return listed(BACKENDS.flatMap((backend) => backend.cli.example?.(namespace) ?? []));
}

/** The `<url>` argument's help. */
export const URL_HELP = `connection URL, e.g. ${urlExamples('myapp')}`;

/** Where each backend reads its credentials from (never from arguments, which `ps` shows). */
export const CREDENTIALS_LINE = `Credentials are read from the environment: ${BACKENDS.flatMap((backend) => backend.cli.credentialsHelp ?? []).join(', ')}.`;
