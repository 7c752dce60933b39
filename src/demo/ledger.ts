import { StaleTokenError } from '../../recipes/errors.js';
import { fencedWrite } from '../fence/cas.js';
import { MemoryCasStore } from '../fence/memory.js';

/** The ledger's one record in the fenced store: its value is every settled period. */
const LEDGER = 'payments/ledger';

type Settled = ReadonlyMap<number, { worker: string; token: bigint }>;

/** What a settle tells the worker: accepted, or refused by the fence (the error's message: data that crosses IPC). */
export type SettleOutcome = { readonly accepted: true } | { readonly accepted: false; readonly refusal: string };

/**
 * The settlement ledger the demo protects, in the parent process (workers in other processes reach it
 * over IPC): a record of baton's compare-and-set fence (baton-locks/fence), so a write with a token
 * below the highest accepted is refused by the resource with StaleTokenError, whatever the worker believes.
 */
export class Ledger {
  readonly refused: { worker: string; period: number; token: bigint; newest: bigint }[] = [];
  readonly violations: string[] = [];
  readonly #store = new MemoryCasStore<Settled>();

  get settledBy(): Settled {
    return [...this.#store.entries()][0]?.[1].value ?? new Map();
  }

  isSettled(period: number): boolean {
    return this.settledBy.has(period);
  }

  async settle(period: number, worker: string, token: bigint): Promise<SettleOutcome> {
    let earlier: string | undefined;
    try {
      await fencedWrite(this.#store, LEDGER, token, (settled = new Map()) => {
        earlier = settled.get(period)?.worker; // set again on each attempt: only the one written counts
        return new Map([...settled, [period, { worker, token }]]);
      });
    } catch (error) {
      if (!(error instanceof StaleTokenError)) throw error;
      this.refused.push({ worker, period, token, newest: error.mark });
      return { accepted: false, refusal: `${error.name}: ${error.message}` };
    }
    if (earlier !== undefined) this.violations.push(`period ${period} settled twice: by ${earlier} and by ${worker}`);
    return { accepted: true };
  }
}

/** The shared configuration: a version number behind the same fence, written only with a current token. */
export class ConfigStore {
  readonly #store = new MemoryCasStore<number>();

  get version(): number {
    return [...this.#store.entries()][0]?.[1].value ?? 1;
  }

  async write(version: number, token: bigint): Promise<boolean> {
    try {
      await fencedWrite(this.#store, 'config/pricing', token, () => version);
      return true;
    } catch (error) {
      if (error instanceof StaleTokenError) return false;
      throw error;
    }
  }
}
