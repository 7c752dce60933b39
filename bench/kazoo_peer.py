"""A kazoo peer for baton's benchmarks, driven over stdin/stdout so that its samples alternate with
baton's in the same run. Commands, one per line:
  `<recipe> <count>`  recipe is lock, read or write: answers one line of space-separated cycle times
                      in milliseconds;
  `contend <ms>`      acquire and release the contended lock for that long, as one of several
                      processes: answers one JSON line with every grant and release time
                      (microseconds on CLOCK_MONOTONIC, which Node's process.hrtime reads too) and
                      each holder's queue sequence number;
  `quit`              ends it (so does the end of stdin)."""
import json
import sys
import time

from kazoo.client import KazooClient


def now_us() -> int:
    return time.monotonic_ns() // 1000


def cycles(recipe, count: int) -> str:
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        recipe.acquire()
        recipe.release()
        samples.append((time.perf_counter() - started) * 1000.0)
    return " ".join(f"{s:.4f}" for s in samples)


def contend(lock, ms: float) -> str:
    started = now_us()
    until = started + int(ms * 1000)
    acquisitions = []
    while now_us() < until:
        lock.acquire()
        granted = now_us()
        sequence = lock.node[-10:]  # kazoo clears lock.node on release
        releasing = now_us()
        lock.release()
        acquisitions.append([granted, releasing, sequence])
    return json.dumps({"startedUs": started, "finishedUs": now_us(), "acquisitions": acquisitions})


def main() -> None:
    hosts = sys.argv[1]
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start()
    recipes = {
        "lock": client.Lock("/bench-kazoo/lock", "bench"),
        "read": client.ReadLock("/bench-kazoo/rw", "bench"),
        "write": client.WriteLock("/bench-kazoo/rw", "bench"),
    }
    contended = client.Lock("/bench-kazoo/contended", "bench")
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        if words[0] == "contend":
            print(contend(contended, float(words[1])), flush=True)
        else:
            print(cycles(recipes[words[0]], int(words[1])), flush=True)
    client.stop()
    client.close()


if __name__ == "__main__":
    main()
