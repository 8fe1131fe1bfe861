"""docs/DEPLOY.md's "Past one machine" topology, started on loopback and loaded by simulated users.

    .venv/bin/python bench/scale_out.py [--users 40] [--seconds 60] [--rounds 2]
    .venv/bin/python bench/scale_out.py --faults [--users 40] [--only redis postgres ...]

Everything is a real process (tests/fixtures/topology.py): PostgreSQL, Redis, a Chroma
server, the memory servers over streamable HTTP with a token, two Daphnes with production
settings, the workers, the scripted model paced like a real one (a tool call, then 150
tokens at 50/s). Each user (tests/fixtures/scale_users.py) loops on a chat turn, a memory
saved and two memory searches, sending every write again with its Idempotency-Key until it
is acknowledged.

- Default: the same load against one memory server, then two (users spread by namespace),
  interleaved over `--rounds`: operations per second and search latency for each, and the
  ratio two/one at the median. The Chroma server is shared by both.
- `--faults`: one topology with two memory servers; for each fault, a load of `--seconds`
  during which the part is killed (SIGKILL; Postgres: an immediate stop) at 10 s and
  started again 5 s later. Reported: the failures the users saw, how long after the restart
  the last one came (recovery), then, counted against what was sent once every job is
  done: saves and turns lost or duplicated, answers left "streaming", exchanges never
  learnt, jobs failed for good.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fixtures import scale_users  # noqa: E402
from tests.fixtures.topology import Topology  # noqa: E402

FAULTS = ("redis", "postgres", "memory-1", "worker", "web-1")
KILL_AT, DOWN_FOR = 10.0, 5.0
DRAIN = 900.0  # seconds the jobs a load left may take before they count as never run


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def throughput(users: int, seconds: float, servers: int, workers: int) -> dict:
    with Topology(memory_servers=servers, workers=workers, learn_delay=None) as town:
        town.create_users(scale_users.user_names(users), scale_users.PASSWORD)
        tally = asyncio.run(scale_users.load(town, users, seconds))
        # Saves and turns acknowledged are counted at once; the jobs left are not waited for.
        kept = scale_users.count(town, tally, timeout=0)
    searches = sorted(tally.latencies.get("search", []))
    return {
        "servers": servers,
        "searches/s": tally.per_second("search", tally.elapsed),
        "saves/s": tally.per_second("save", tally.elapsed),
        "turns/s": tally.per_second("turn", tally.elapsed),
        "search median ms": 1000 * median(searches),
        "search p95 ms": 1000 * searches[int(len(searches) * 0.95)] if searches else 0,
        "turn median s": median(tally.latencies.get("turn", [])),
        "failed": sum(tally.failed.values()),
        "lost or duplicated": kept["saves lost"] + kept["saves duplicated"]
        + kept["turns lost"] + kept["turns duplicated"],
    }  # fmt: skip


def compare(args) -> None:
    runs = []
    for round_ in range(args.rounds):
        for servers in (1, 2) if round_ % 2 == 0 else (2, 1):
            run = throughput(args.users, args.seconds, servers, args.workers)
            print(run, flush=True)
            runs.append(run)
    print(f"\n{args.users} users, {args.seconds:g} s, {args.rounds} rounds (medians)\n")
    keys = [k for k in runs[0] if k != "servers"]
    print("| memory servers | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    medians = {}
    for servers in (1, 2):
        mine = [run for run in runs if run["servers"] == servers]
        medians[servers] = {k: median([run[k] for run in mine]) for k in keys}
        print(f"| {servers} | " + " | ".join(f"{medians[servers][k]:.3g}" for k in keys) + " |")
    for key in ("searches/s", "saves/s", "search median ms"):
        print(f"two / one, {key}: {medians[2][key] / medians[1][key]:.2f}")


def recovered_after(tally: scale_users.Tally, marks: dict) -> float | str:
    """Seconds from the part's restart to the last failure of what failed (0: the first
    call after the restart succeeded); "-" when nothing failed."""
    failed = {op for _, op, ok in tally.attempts if not ok}
    if not failed:
        return "-"
    last = max(t for t, op, ok in tally.attempts if not ok)
    return round(max(0.0, last - marks["back"]), 1)


def faults(args) -> None:
    rows = []
    with Topology(memory_servers=2, workers=args.workers, learn_delay=None) as town:
        print(f"topology in {town.dir}", flush=True)
        town.create_users(scale_users.user_names(args.users), scale_users.PASSWORD)
        failed_before = 0
        for name in args.only or FAULTS:
            marks: dict[str, float] = {}
            during = scale_users.killed_and_restarted(
                town, name, marks, at=KILL_AT, down_for=DOWN_FOR
            )
            tally = asyncio.run(scale_users.load(town, args.users, args.seconds, during))
            kept = scale_users.count(town, tally, timeout=DRAIN)
            recovery = recovered_after(tally, marks)
            failed_jobs = kept["jobs failed for good"] - failed_before
            failed_before = kept["jobs failed for good"]
            row = {
                "fault": name,
                "failures seen": ", ".join(f"{k} ×{v}" for k, v in tally.failed.items()) or "none",
                "recovery s": recovery,
                **kept,
                "jobs failed for good": failed_jobs,
            }  # fmt: skip
            print(row, flush=True)
            rows.append(row)
    print(f"\n{args.users} users, {args.seconds:g} s each; killed at {KILL_AT:g} s, back "
          f"{DOWN_FOR:g} s later\n")  # fmt: skip
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|---" * len(keys) + "|")
    for row in rows:
        print("| " + " | ".join(str(row[k]) for k in keys) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=40)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rounds", type=int, default=2)
    # Two as docs/DEPLOY.md's units; a learning job mostly waits for the model (~6 s each).
    parser.add_argument("--workers", type=int, default=2, help="workers (manage.py db_worker)")
    parser.add_argument("--faults", action="store_true", help="the fault matrix")
    parser.add_argument("--only", nargs="*", choices=FAULTS)
    args = parser.parse_args()
    faults(args) if args.faults else compare(args)


if __name__ == "__main__":
    main()
