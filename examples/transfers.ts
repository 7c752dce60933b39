// Transfers between accounts hold both accounts' locks at once with a MultiLock: the locks are always
// taken in one order, so two transfers in opposite directions cannot deadlock. A settlement job calls
// the bank's API through a Semaphore: at most two calls at once, over every node.
import { pathToFileURL } from 'node:url';

import { connect, MultiLock, Semaphore, type Session } from 'baton-locks';

const ACCOUNTS = ['alice', 'bob', 'carol'];

/** The protected resource: each account refuses a write whose token is below the last it accepted.
 *  In SQL both checks and both updates are one transaction:
 *  UPDATE accounts SET balance = balance + $delta, token = $token WHERE id = $id AND token <= $token */
export class FencedLedger {
  readonly balances = new Map(ACCOUNTS.map((account) => [account, 100]));
  readonly #tokens = new Map<string, bigint>();
  async move(from: string, to: string, amount: number, tokens: ReadonlyMap<string, bigint>): Promise<string> {
    const [fromToken, toToken] = [tokens.get(`accounts/${from}`)!, tokens.get(`accounts/${to}`)!];
    if (fromToken < (this.#tokens.get(from) ?? -1n) || toToken < (this.#tokens.get(to) ?? -1n))
      return 'refused as stale';
    if (this.balances.get(from)! < amount) return 'insufficient funds';
    this.#tokens.set(from, fromToken).set(to, toToken);
    this.balances.set(from, this.balances.get(from)! - amount).set(to, this.balances.get(to)! + amount);
    return 'done';
  }
}

/** Moves `amount` from one account to another while holding both accounts' locks. */
export async function transfer(
  session: Session,
  ledger: FencedLedger,
  from: string,
  to: string,
  amount: number,
): Promise<string> {
  const both = new MultiLock(session, [`accounts/${from}`, `accounts/${to}`]);
  return both.withLock(
    async (locks) => {
      // ... check limits, write an audit line, passing locks.signal to whatever can be cancelled ...
      if (!locks.held) return 'locks lost: not writing';
      return ledger.move(from, to, amount, locks.fencingTokens);
    },
    { timeoutMs: 10_000 },
  );
}

/** The bank's API, which allows two calls at once per client; counts what it sees. */
export class Bank {
  calls = 0;
  #active = 0;
  peak = 0;
  async submit(_batch: number): Promise<void> {
    this.peak = Math.max(this.peak, ++this.#active);
    await new Promise((resolve) => setTimeout(resolve, 5));
    this.#active -= 1;
    this.calls += 1;
  }
}

/** Sends one settlement batch to the bank, waiting for one of the two permits. */
export async function settle(session: Session, bank: Bank, batch: number): Promise<void> {
  const bankApi = new Semaphore(session, 'bank-api', { permits: 2 });
  await bankApi.withPermit(() => bank.submit(batch), { timeoutMs: 10_000 });
}

/** Three nodes, each making 6 transfers in both directions and settling 4 batches, all at once. */
export async function main(url: string, log = console.log): Promise<{ ledger: FencedLedger; bank: Bank }> {
  const [ledger, bank] = [new FencedLedger(), new Bank()];
  const sessions = await Promise.all([0, 1, 2].map(() => connect(url)));
  try {
    await Promise.all(
      sessions.flatMap((session, node) => [
        ...[0, 1, 2, 3, 4, 5].map(async (i) => {
          const [from, to] = [ACCOUNTS[(node + i) % 3]!, ACCOUNTS[(node + i + 1 + (i % 2)) % 3]!];
          log(`node ${node}: ${from} -> ${to} 10: ${await transfer(session, ledger, from, to, 10)}`);
        }),
        ...[0, 1, 2, 3].map((batch) => settle(session, bank, node * 4 + batch)),
      ]),
    );
    log(
      `balances ${JSON.stringify(Object.fromEntries(ledger.balances))}; bank calls ${bank.calls}, at most ${bank.peak} at once`,
    );
    return { ledger, bank };
  } finally {
    await Promise.all(sessions.map((session) => session.close()));
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main(process.argv[2] ?? 'memory://example');
