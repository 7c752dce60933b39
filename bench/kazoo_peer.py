"""A kazoo peer for baton's benchmarks, driven over stdin/stdout so that its samples alternate with
baton's in the same run. Commands, one per line: `<recipe> <count>` where recipe is lock, read or
write; answers one line of space-separated cycle times in milliseconds. `quit` ends it."""
import sys
import time

from kazoo.client import KazooClient


def main() -> None:
    hosts = sys.argv[1]
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start()
    recipes = {
        "lock": client.Lock("/bench-kazoo/lock", "bench"),
        "read": client.ReadLock("/bench-kazoo/rw", "bench"),
        "write": client.WriteLock("/bench-kazoo/rw", "bench"),
    }
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        recipe, count = recipes[words[0]], int(words[1])
        samples = []
        for _ in range(count):
            started = time.perf_counter()
            recipe.acquire()
            recipe.release()
            samples.append((time.perf_counter() - started) * 1000.0)
        print(" ".join(f"{s:.4f}" for s in samples), flush=True)
    client.stop()
    client.close()


if __name__ == "__main__":
    main()
