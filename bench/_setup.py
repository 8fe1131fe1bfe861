"""Shared by the chat benches: Django on a throwaway SQLite file, quiet logs."""

import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def django_on_temp_db(**env):
    """Point Django at a fresh migrated SQLite file (never the developer's db.sqlite3)."""
    sys.path.insert(0, str(ROOT))
    tmp = tempfile.mkdtemp(prefix="ikario-bench-")
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp}/bench.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ikario_clone.settings")
    os.environ["MCP_MEMORY_ENABLED"] = "false"
    os.environ["LOG_LEVEL"] = "WARNING"
    # Development settings (DEBUG off would mean production: HTTPS redirect, a real
    # SECRET_KEY); a bench that asks for DEBUG="false" gets it after set-up, as tests do.
    debug = env.pop("DEBUG", "true")
    os.environ["DEBUG"] = "true"
    os.environ.update(env)
    import django

    django.setup()
    if debug == "false":
        from django.conf import settings

        settings.DEBUG = False  # no query log, as in production
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return tmp


def summary(samples_ms: list[float]) -> dict:
    ordered = sorted(samples_ms)
    return {
        "median": statistics.median(ordered),
        "p95": ordered[max(0, int(len(ordered) * 0.95) - 1)],
        "n": len(ordered),
    }


def median_ratio(
    rounds: list[tuple[list[float], list[float]]], resamples: int = 4000, seed: int = 0
) -> tuple[float, float, float]:
    """median(a) / median(b) and its 95 % bootstrap interval, for samples taken in rounds
    (each round's (a samples, b samples) taken side by side): the rounds are resampled
    whole, so what a round's load did to both stays paired."""
    import numpy as np

    def ratio(chosen) -> float:
        a = [x for r in chosen for x in rounds[r][0]]
        b = [x for r in chosen for x in rounds[r][1]]
        return statistics.median(a) / statistics.median(b)

    picks = np.random.default_rng(seed).integers(0, len(rounds), (resamples, len(rounds)))
    spread = sorted(ratio(p) for p in picks)
    low, high = spread[int(0.025 * resamples)], spread[int(0.975 * resamples) - 1]
    return ratio(range(len(rounds))), low, high


def wait_indexed(timeout: float = 3600.0) -> float:
    """Seconds until the app's memory server has written every vector (they are written
    behind the add): before measuring what searches find."""
    import time

    from memory import services

    started = time.perf_counter()
    while (services.server_stats().get("health") or {}).get("unindexed"):
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"vectors still pending after {timeout:.0f} s")
        time.sleep(0.2)
    return time.perf_counter() - started
