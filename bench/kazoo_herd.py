"""kazoo's side of the herd benchmark: `kazoo_herd.py <hosts> <n>` takes kazoo's Lock with one client,
queues n waiters behind it, each with a client (a session) of its own, and answers `ready`. Then, one
command per line:
  release  the holder releases; answers `granted` once the first waiter holds (the parent counts the
           watches the server fired meanwhile);
  drain    every waiter releases as soon as it holds; answers `done <grants out of queue order>`;
  quit     closes every client."""
import sys
import threading

from kazoo.client import KazooClient

PATH = "/bench-kazoo/herd"


def started(hosts: str) -> KazooClient:
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start()
    return client


def main() -> None:
    hosts, count = sys.argv[1], int(sys.argv[2])
    holder_client = started(hosts)
    clients = [started(hosts) for _ in range(count)]
    holder = holder_client.Lock(PATH, "holder")
    holder.acquire()
    sequences = []
    first = threading.Event()
    drain = threading.Event()

    def wait_turn(client: KazooClient) -> None:
        lock = client.Lock(PATH, "waiter")
        lock.acquire()
        sequences.append(int(lock.node[-10:]))
        first.set()
        drain.wait()
        lock.release()

    threads = [threading.Thread(target=wait_turn, args=(client,)) for client in clients]
    for thread in threads:
        thread.start()
    print("ready", flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "release":
            holder.release()
            first.wait()
            print("granted", flush=True)
        elif command == "drain":
            drain.set()
            for thread in threads:
                thread.join()
            out_of_order = sum(1 for a, b in zip(sequences, sequences[1:]) if b <= a)
            print(f"done {out_of_order}", flush=True)
        else:
            break
    drain.set()
    for client in [holder_client, *clients]:
        client.stop()
        client.close()


if __name__ == "__main__":
    main()
