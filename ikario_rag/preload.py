"""Cold start: what the first search needs starts loading as soon as the MCP SDK is imported.

A server's first answered search waits for the MCP SDK's import (~1-3 s, before
`initialize` can be answered), then for chromadb's (~1-2 s), the model (~0.5 s) and, at the
first search itself, the vectors of relevance's neutral bank (60 sentences: ~0.4 s of ONNX on
the batch session, at a lower priority, so seconds on a busy machine). Here all three start
on threads of their own right after the SDK's import, before the server is built; once the
model is loaded, a warm-up thread gets the bank's vectors (embedded at the first start, then
read from beside the model: Embedder.fixed_vectors) and runs the query session once, so
the first search finds both done (docs/BENCHMARKS.md, the cold start).

Not before the SDK's import: on two shared cores that makes `initialize` answer later (the
imports share the GIL) for a first search no sooner, and two threads importing at once can
meet a half-initialised package (numpy's import cycle raises ImportError so).
"""

from __future__ import annotations

import gc
import logging
import threading

from ikario_rag import config
from ikario_rag.embed import Embedder
from ikario_rag.runtime import MODEL_WAIT  # as long as the server waits for the model

log = logging.getLogger("ikario_rag.preload")


class Preload:
    """The embedder (its model loading), chromadb's import and the model's warm-up."""

    def __init__(self) -> None:
        self.embedder = Embedder().start()
        self._stopping = threading.Event()
        self.vectors = threading.Thread(target=_import_chromadb, name="ikario-preload", daemon=True)
        self.vectors.start()
        self.warm = threading.Thread(target=self._warm_up, name="ikario-warm-up", daemon=True)
        self.warm.start()

    def _warm_up(self) -> None:
        loaded = self.embedder.wait_loaded(MODEL_WAIT) and self.embedder.ready
        if not loaded or self._stopping.is_set():
            return
        try:
            from ikario_rag import relevance

            relevance.BASELINES.bank(self.embedder)
            self.embedder.encode_query("warm up")
            log.info("embedding model warmed up")
        except Exception:  # the first search computes them instead, and reports a failure
            log.warning("warming up the embedding model failed", exc_info=True)
        self.vectors.join()
        # What start-up made (the SDK, chromadb, the model: ~150k objects) lives as long as
        # the server: out of the collector's sight, a full collection that falls in a search
        # (1-2 in 600 searches) costs about a third as much (bench/_gc_pauses.py).
        gc.freeze()

    def join(self) -> None:
        """Stop the warm-up, or wait for its ONNX run: an exit in the middle of one, or of the
        model's loading, could abort the process."""
        self._stopping.set()
        self.warm.join()


def _import_chromadb() -> None:
    config.quiet_libraries()
    try:
        import chromadb  # noqa: F401
        import chromadb.config  # noqa: F401
    except Exception:  # the index imports it again when it opens, and reports a failure then
        log.warning("preloading chromadb failed", exc_info=True)
