"""The whole test suite, several times in a row, while CPU-bound processes load every core.

`make test-stress` runs this: the proof that no test depends on how fast the machine is.
Two busy-loop processes (one per core of the 2-core reference machine) run for the whole
time; the suite must pass every round. Prints each round's result (pytest's summary
line), duration and load average, then the median round; with --quiet-round, one round
without the burners first, the comparison the median is given against (a ratio).

    .venv/bin/python bench/suite_under_load.py [--rounds 3] [--burners 2] [--quiet-round]
        [-- pytest args]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import statistics
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


# pytest's closing line: "1554 passed, 3 skipped in 598.21s (0:09:58)".
_SUMMARY = re.compile(r"\d+ (?:passed|failed|error)")


def run_suite(pytest_args: list[str]) -> tuple[int, float, str]:
    """One run of the suite, its output passed through: (exit code, seconds, summary)."""
    started = time.monotonic()
    summary = ""
    with subprocess.Popen(
        [sys.executable, "-m", "pytest", *pytest_args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as suite:
        for line in suite.stdout:
            sys.stdout.write(line)
            if _SUMMARY.search(line):
                summary = line.strip(" =\n")
    return suite.returncode, time.monotonic() - started, summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--burners", type=int, default=2)
    parser.add_argument(
        "--quiet-round", action="store_true", help="one round without burners first"
    )
    parser.add_argument(
        "pytest_args", nargs="*", default=["-q", "-n", "2", "-p", "no:cacheprovider"]
    )
    args = parser.parse_args()

    quiet = None
    if args.quiet_round:
        quiet = run_suite(args.pytest_args)
        print(f"quiet round: exit {quiet[0]} in {quiet[1]:.0f} s ({quiet[2]})", flush=True)
    burners = [multiprocessing.Process(target=burn, daemon=True) for _ in range(args.burners)]
    for proc in burners:
        proc.start()
    results = []
    try:
        for round_no in range(1, args.rounds + 1):
            code, seconds, summary = run_suite(args.pytest_args)
            load = os.getloadavg()[0]
            results.append((round_no, code, seconds, summary, load))
            print(f"stress round {round_no}: exit {code} in {seconds:.0f} s", flush=True)
            if code != 0:
                break
    finally:
        for proc in burners:
            proc.kill()
    print(f"\nsuite under load ({args.burners} CPU-bound processes beside it):")
    for round_no, code, seconds, summary, load in results:
        verdict = "passed" if code == 0 else "FAILED"
        print(f"  round {round_no}: {verdict} in {seconds:.0f} s ({summary}; load {load:.1f})")
    median = statistics.median(seconds for _, _, seconds, _, _ in results)
    print(f"  median round: {median:.0f} s")
    if quiet is not None:
        print(f"  quiet round: {quiet[1]:.0f} s ({quiet[2]}): {median / quiet[1]:.2f}x under load")
    ok = len(results) == args.rounds and all(code == 0 for code in (r[1] for r in results))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
