import type { Command } from 'commander';

import { UnknownEntryError } from '../../recipes/errors.js';
import { forceRelease } from '../../recipes/force-release.js';
import { validateName } from '../../recipes/validate.js';
import { URL_HELP } from './backend-help.js';
import { type CliHelpers, CREDENTIALS_HELP, exitWith, milliseconds, openSession } from './common.js';
import { EXIT } from './exit-status.js';
import { runCommand } from './run.js';

/** The options of `baton release`, as commander parses them. */
export interface ReleaseFlags {
  readonly entry: string;
  readonly connectTimeout: number;
}

/** Registers `baton release <url> <name> --entry KEY`. */
export function registerRelease(program: Command, helpers: CliHelpers): void {
  program
    .command('release')
    .description(
      "force release: remove one entry (another session's hold or wait) from a queue; its holder's signal aborts as revoked",
    )
    .argument('<url>', URL_HELP)
    .argument('<name>', 'the lock name, e.g. reports/end-of-day')
    .requiredOption('--entry <key>', 'the entry to remove: its key, as `baton inspect --json` shows it')
    .option('--connect-timeout <ms>', 'give up connecting after this many milliseconds', milliseconds(1), 5_000)
    .addHelpText('after', CREDENTIALS_HELP)
    .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : EXIT.usage))
    .action(async (url: string, name: string, flags: ReleaseFlags) => {
      exitWith(await runRelease(url, name, flags, helpers));
    });
}

/** `baton release`: 0 when the entry was removed, 66 when there is no such entry (see exit-status.ts). */
export function runRelease(url: string, name: string, flags: ReleaseFlags, helpers: CliHelpers): Promise<number> {
  return runCommand(async (run) => {
    validateName(name);
    const session = (run.session = await openSession(url, { ...flags, grace: 0 }, helpers, run.relay));
    try {
      const revoked = await forceRelease(session, name, flags.entry, { signal: run.relay.signal });
      process.stdout.write(
        `removed ${revoked.key} (${revoked.kind}, session ${revoked.owner}, fencing token ${revoked.fencingToken}) from "${name}"\n`,
      );
      return 0;
    } catch (error) {
      if (!(error instanceof UnknownEntryError)) throw error;
      process.stderr.write(`baton: ${error.message}; nothing was removed\n`);
      return EXIT.noEntry;
    }
  });
}
