import { createInterface } from 'node:readline';

import zookeeper from 'node-zookeeper-client';

import { create, getChildren, remove, watchData, type ZkClient } from '../src/backends/zookeeper/client.js';
import { mkdirp } from '../src/backends/zookeeper/mkdirp.js';
import { nowUs } from './clock.js';
import { FLOOR_NODE } from './floor-name.js';
import { openClient } from './zk-client.js';

/**
 * One side of the raw handoff floor: `node handoff-worker.js <hosts>`, the same client baton drives
 * and nothing else. The least a safe handoff needs when the queue is deep: the holder deletes its node;
 * the next in line, watching that node, is told and lists the children to see it is now first.
 * Commands on stdin, one answer line each (`watch` answers twice: armed, then listed):
 *   fill <dir> <n>    create n ephemeral nodes in dir, so that its listing is as long as a deep queue's
 *                     (every node named like baton's entries, so that the listing is as large too)
 *   create <dir>      create an ephemeral sequential node in dir; answers its path
 *   watch <path>      read the node with a watch; answers `armed`, then `listed <us>` once the watch
 *                     fired and the listing of its directory came back
 *   delete <path>     answers `deleted <us>`, the time just before the delete was sent
 */
async function main(): Promise<void> {
  const client = await openClient(process.argv[2]!);
  process.stdout.write('ready\n');
  for await (const line of createInterface({ input: process.stdin })) {
    const [command, path, count] = line.split(' ') as [string, string, string | undefined];
    if (command === 'fill') await fill(client, path, Number(count));
    else if (command === 'create')
      say(await create(client, `${path}/${FLOOR_NODE}`, zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL));
    else if (command === 'watch') await watch(client, path);
    else if (command === 'delete') {
      const sentUs = nowUs();
      await remove(client, path);
      say(`deleted ${sentUs}`);
    } else break;
  }
  client.close();
}

async function fill(client: ZkClient, dir: string, count: number): Promise<void> {
  await mkdirp(client, dir);
  for (let i = 0; i < count; i += 1)
    await create(client, `${dir}/${FLOOR_NODE}`, zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL);
  say('filled');
}

async function watch(client: ZkClient, path: string): Promise<void> {
  const dir = path.slice(0, path.lastIndexOf('/'));
  const onEvent = (): void => {
    getChildren(client, dir).then(
      () => say(`listed ${nowUs()}`),
      (error: unknown) => say(`failed ${String(error)}`),
    );
  };
  say((await watchData(client, path, onEvent)) ? 'armed' : 'missing');
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
