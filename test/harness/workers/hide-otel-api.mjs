// Loaded with `node --import`: makes @opentelemetry/api unresolvable, as in a project that never
// installed it, and writes each attempt to resolve it to the file BATON_RESOLVE_LOG names (if set),
// so that a test can tell "never asked for" from "asked for and failed quietly".
import { register } from 'node:module';

const hooks = `
import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, nextResolve) {
  if (specifier === '@opentelemetry/api' || specifier.startsWith('@opentelemetry/')) {
    if (process.env.BATON_RESOLVE_LOG) appendFileSync(process.env.BATON_RESOLVE_LOG, specifier + '\\n');
    return nextResolve('baton-test-package-that-is-not-installed', context);
  }
  return nextResolve(specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`);
