"""How many ONNX Runtime threads for a query, and for a batch, idle and on busy cores.

    .venv/bin/python bench/embed_threads.py [--queries 200] [--burners 2]

In-process, on the exported all-MiniLM-L6-v2 (ikario_rag/model.py). Sessions of 1 and 2
intra-op threads, with idle pool threads sleeping (what ikario_rag uses) or spinning
(onnxruntime's default), and sentence-transformers on torch (1 thread, the code before ONNX)
for comparison:
- one query: LoCoMo questions one at a time, p50/p95 ms, the configurations interleaved
  query by query;
- a batch: LoCoMo turns with their neighbours (as ikario_rag indexes them), texts/s, in the
  same slices the server uses.
Both first on an idle machine (as idle as the shared machine is), then with --burners
CPU-bound processes beside it (`while True: pass`), as when other work holds the cores.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _locomo import load  # noqa: E402

from ikario_rag import embed, model  # noqa: E402


def burn() -> None:
    while True:
        pass


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


class Onnx:
    def __init__(self, threads: int, spinning: bool) -> None:
        import onnxruntime

        self.tokenizer = model.tokenizer()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry(
            "session.intra_op.allow_spinning", "1" if spinning else "0"
        )
        self.session = onnxruntime.InferenceSession(
            str(model.ensure_model()), options, providers=["CPUExecutionProvider"]
        )
        self.embedder = embed.Embedder()

    def encode(self, texts: list[str]) -> np.ndarray:
        ids = [e.ids for e in self.tokenizer.encode_batch(texts)]
        out = np.empty((len(ids), embed.DIMENSIONS), dtype=np.float32)
        self.embedder._output = model.OUTPUT
        for group in embed.slices([len(i) for i in ids], embed.SLICE_TOKENS):
            out[group] = self.embedder._run(self.session, [ids[p] for p in group])
        return out


class Torch:
    def __init__(self) -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(1)
        self.model = SentenceTransformer(str(model.weights_dir()), device="cpu")

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts, batch_size=64, normalize_embeddings=True)


def measure(encoders: dict, questions: list[str], texts: list[str], label: str) -> None:
    print(f"\n{label}: one query, ms (interleaved, {len(questions)} questions)")
    times: dict[str, list[float]] = {name: [] for name in encoders}
    for question in questions:
        for name, encoder in encoders.items():
            started = time.perf_counter()
            encoder.encode([question])
            times[name].append((time.perf_counter() - started) * 1000)
    for name, values in times.items():
        print(f"  {name:28s} p50 {statistics.median(values):7.2f}  p95 {pct(values, 95):7.2f}")
    print(f"{label}: a batch of {len(texts)} indexed turns, texts/s (best of 2)")
    for name, encoder in encoders.items():
        rates = []
        for _ in range(2):
            started = time.perf_counter()
            encoder.encode(texts)
            rates.append(len(texts) / (time.perf_counter() - started))
        print(f"  {name:28s} {max(rates):7.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--burners", type=int, default=2)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()
    conversations = load()
    questions = [q.question for c in conversations for q in c.questions][: args.queries]
    turns = [t.content for c in conversations for t in c.turns]
    texts = [
        "\n".join(turns[max(0, i - 1) : i + 2])  # the turn with the one before and after
        for i in range(1, args.batch + 1)
    ]
    encoders = {
        "onnx 1 thread": Onnx(1, spinning=False),
        "onnx 2 threads, sleeping": Onnx(2, spinning=False),
        "onnx 2 threads, spinning": Onnx(2, spinning=True),
        "torch 1 thread (before)": Torch(),
    }
    print(f"cores: {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
    measure(encoders, questions, texts, "idle")
    burners = [multiprocessing.Process(target=burn, daemon=True) for _ in range(args.burners)]
    for process in burners:
        process.start()
    try:
        measure(encoders, questions, texts, f"{args.burners} CPU-bound processes beside it")
    finally:
        for process in burners:
            process.terminate()
            process.join()


if __name__ == "__main__":
    main()
