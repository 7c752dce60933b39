/** Counters from etcd's Prometheus endpoint (`/metrics`, plain HTTP: reading it costs no gRPC request). */
async function metrics(endpoint: string): Promise<string[]> {
  return (await (await fetch(`${endpoint}/metrics`)).text()).split('\n');
}

function sum(lines: readonly string[], matches: (line: string) => boolean): number {
  let total = 0;
  for (const line of lines) if (matches(line)) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  return total;
}

/** Sum of unary gRPC requests the server has handled. */
export async function unaryHandled(endpoint: string): Promise<number> {
  return sum(
    await metrics(endpoint),
    (line) => line.startsWith('grpc_server_handled_total{') && line.includes('grpc_type="unary"'),
  );
}

/** Unary requests the server handled while `run` ran. */
export async function etcdRequestsDuring(endpoint: string, run: () => Promise<unknown>): Promise<number> {
  const before = await unaryHandled(endpoint);
  await run();
  return (await unaryHandled(endpoint)) - before;
}
