"""The quantised (int8) model against fp32 for a query, and how to run its bulk work.

    .venv/bin/python bench/quantised_model.py [--queries 300] [--turns 600]

In-process, on the exported all-MiniLM-L6-v2 and its quantised copy (ikario_rag/model.py):
- one query: LoCoMo questions one at a time on fp32 (1 thread; 2 threads with idle pool
  threads sleeping, as ikario_rag configures sessions, and spinning, onnxruntime's
  default) and on int8 (1 thread), the sessions in a random order for each question;
  p50 / p95 ms;
- bulk work one text per run (how ikario_rag runs the quantised model, so that a text's
  vector does not depend on the texts beside it): LoCoMo turns through one int8 session of
  2 threads, two int8 sessions of 1 thread side by side on two Python threads (each text
  on one of them), and one session of 1 thread; texts/s, twice.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_latency import pct, questions, sessions  # noqa: E402

from ikario_rag import model  # noqa: E402


def session(path: Path, threads: int, spinning: bool = False):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def run(sess, ids: list[int]) -> None:
    row = np.array([ids], dtype=np.int64)
    feed = {"input_ids": row, "attention_mask": np.ones_like(row)}
    feed["token_type_ids"] = np.zeros_like(row)
    sess.run(None, feed)


def one_query(fp32: Path, int8: Path, tokenizer, count: int) -> None:
    variants = {
        "fp32, 1 thread": session(fp32, 1),
        "fp32, 2 threads sleeping": session(fp32, 2),
        "fp32, 2 threads spinning": session(fp32, 2, spinning=True),
        "int8, 1 thread": session(int8, 1),
    }
    spent: dict[str, list[float]] = {name: [] for name in variants}
    shuffled = random.Random(1)
    for question in questions(count):
        ids = tokenizer.encode(question).ids
        for name in shuffled.sample(list(variants), len(variants)):
            started = time.perf_counter()
            run(variants[name], ids)
            spent[name].append((time.perf_counter() - started) * 1000)
    for name, values in spent.items():
        p50, p95 = statistics.median(values), pct(values, 95)
        print(f"one query, {name}: p50 {p50:.2f} / p95 {p95:.2f} ms")


def bulk(int8: Path, tokenizer, count: int) -> None:
    turns = [item["content"] for s in sessions(count) for item in s][:count]
    rows = [tokenizer.encode(t).ids for t in turns]
    two_threads, one_a, one_b = session(int8, 2), session(int8, 1), session(int8, 1)

    def rate(work) -> float:
        started = time.perf_counter()
        work()
        return len(rows) / (time.perf_counter() - started)

    def side_by_side() -> None:
        shares = [
            threading.Thread(target=lambda s=s, k=k: [run(s, r) for r in rows[k::2]])
            for k, s in enumerate((one_a, one_b))
        ]
        for share in shares:
            share.start()
        for share in shares:
            share.join()

    print(f"bulk: {len(rows)} turns, {statistics.mean(map(len, rows)):.0f} tokens on average")
    for _ in range(2):
        a = rate(lambda: [run(two_threads, r) for r in rows])
        b = rate(side_by_side)
        c = rate(lambda: [run(one_a, r) for r in rows])
        print(
            f"bulk, int8 one text per run: one session of 2 threads {a:.0f} texts/s | "
            f"two sessions of 1 thread side by side {b:.0f} | one session of 1 thread {c:.0f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--turns", type=int, default=600)
    args = parser.parse_args()
    weights = model.weights_dir()
    fp32, int8 = model.ensure_model(weights), model.ensure_quantised(weights)
    tokenizer = model.tokenizer(weights)
    one_query(fp32, int8, tokenizer, args.queries)
    bulk(int8, tokenizer, args.turns)


if __name__ == "__main__":
    main()
