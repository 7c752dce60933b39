// Loaded with `node --import`: makes prom-client unresolvable, as in a project that never installed it.
// The specifier is redirected to a package that does not exist, so the error is Node's own.
import { register } from 'node:module';

const hooks = `
export async function resolve(specifier, context, nextResolve) {
  if (specifier === 'prom-client' || specifier.startsWith('prom-client/')) {
    return nextResolve('baton-test-package-that-is-not-installed', context);
  }
  return nextResolve(specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`);
