import { BatonError } from '../../recipes/errors.js';

/**
 * Loads an optional peer dependency. Node's own error for a missing package names the file that
 * imported it, not what to do; this one says which package to install and for what.
 */
export async function loadPeer<T>(name: string, needed: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (!isMissingModule(error)) throw error;
    throw new BatonError(
      `${needed} needs the optional peer dependency ${name}; install it with: npm install ${name}`,
      'MISSING_DEPENDENCY',
      { cause: error },
    );
  }
}

/** By code, never by message: ESM's ERR_MODULE_NOT_FOUND, or CommonJS's MODULE_NOT_FOUND from inside the package. */
function isMissingModule(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
}
