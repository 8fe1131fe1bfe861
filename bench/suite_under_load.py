"""The whole test suite, several times in a row, while CPU-bound processes load every core.

`make test-stress` runs this: the proof that no test depends on how fast the machine is.
Two busy-loop processes (one per core of the 2-core reference machine) run for the whole
time; the suite must pass every round. Prints each round's result and duration.

    .venv/bin/python bench/suite_under_load.py [--rounds 3] [--burners 2] [-- pytest args]
"""

from __future__ import annotations

import argparse
import multiprocessing
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def burn() -> None:
    """Keep one core busy until killed."""
    n = 0
    while True:
        n = (n * 1103515245 + 12345) % 2147483648


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--burners", type=int, default=2)
    parser.add_argument(
        "pytest_args", nargs="*", default=["-q", "-n", "2", "-p", "no:cacheprovider"]
    )
    args = parser.parse_args()

    burners = [multiprocessing.Process(target=burn, daemon=True) for _ in range(args.burners)]
    for proc in burners:
        proc.start()
    results = []
    try:
        for round_no in range(1, args.rounds + 1):
            started = time.monotonic()
            code = subprocess.call([sys.executable, "-m", "pytest", *args.pytest_args], cwd=ROOT)
            seconds = time.monotonic() - started
            results.append((round_no, code, seconds))
            print(f"stress round {round_no}: exit {code} in {seconds:.0f} s", flush=True)
            if code != 0:
                break
    finally:
        for proc in burners:
            proc.kill()
    print(f"\nsuite under load ({args.burners} CPU-bound processes beside it):")
    for round_no, code, seconds in results:
        print(f"  round {round_no}: {'passed' if code == 0 else 'FAILED'} in {seconds:.0f} s")
    ok = len(results) == args.rounds and all(code == 0 for _, code, _ in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
