"""all-MiniLM-L6-v2 sentence embeddings through ONNX Runtime, loaded in a background thread.

The server answers `initialize` at once; callers that need vectors wait for the model
(an ONNX session opens in ~0.2 s; the first start of a machine exports it once, model.py).
onnxruntime + the `tokenizers` package directly, not sentence-transformers' ONNX backend:
that backend needs optimum and imports torch and transformers at run time, which is most of
the cold start this module exists to remove (torch alone took 3-5 s to import here).

Two sessions on the same file, so that a query never waits behind a batch:
- queries (one text: every search) run on the caller's thread in a one-thread session,
  at once, whatever a batch is doing;
- batches (ingest, re-index) run in a session of IKARIO_BATCH_THREADS threads (default:
  both cores) at a lower priority (nice 10: the cores are theirs only while nothing else
  wants them, the web app's own process included), in slices of at most SLICE_TOKENS padded
  tokens; before each slice a batch waits until no query is running, and a query that
  arrives while a slice runs cancels it (onnxruntime's RunOptions.terminate): the query
  gets the cores at once, the slice runs again after it (the cost: the cancelled part).
Texts are sorted by token count before slicing: each slice is padded only to its own
longest text, and the vectors come back in the caller's order.

Bulk indexing of an index built for them (Memory: `quantised` vectors) runs the same way on
a third session, of the quantised copy of the model (model.ensure_quantised: ~2x faster,
cosine ~0.99 to fp32), opened the first time it is asked for, one text per run. A search of
such an index embeds its query with the same quantised model, on a one-thread session of its
own (a query: 1.7 ms instead of 4.1 ms fp32; LoCoMo R@10 0.822 against 0.820 with fp32
queries, docs/BENCHMARKS.md); a search of an fp32 index embeds it with fp32.

Search queries go through `query_vectors` (or `query_vector` for one), which keeps the vectors
of the last QUERY_CACHE queries (per model): a query asked again (the automatic recall before
a reply and the model's own search often ask the same) costs a lookup instead of a forward
pass. The few fp32 texts of one search (the question, and its forms with a speaker's name
said as "I") embed in one forward pass: a batch of two short texts costs ~1.2x one, two
passes 2x; quantised ones one text per run (see encode_batch).
Texts that never change (relevance's neutral bank) go through `fixed_vectors`: embedded
once, then read from a file beside the model's.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import numpy as np

from ikario_rag import config
from ikario_rag.errors import MemoryUnavailable

log = logging.getLogger("ikario_rag.embed")
T = TypeVar("T")

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSIONS = 384
# Padded tokens per batch slice: one or two LoCoMo turns with their context (~108 tokens),
# ~10-20 ms of work, the longest a query arriving during a batch can find the cores busy.
# Small slices are also the fastest: 256 embedded 49-52 texts/s on the loaded 2-core
# machine, 2048 22/s (the activations of a big slice no longer fit the cores' caches).
SLICE_TOKENS = 256
# A slice cancelled this many times by queries runs to its end the next time: a steady
# stream of searches delays a batch, it cannot starve it.
MAX_CANCELS = 3
# Search queries whose vectors are kept (384 floats each: 256 take 0.4 MB).
QUERY_CACHE = 256


class EmbeddingUnavailable(MemoryUnavailable):
    """The model could not be loaded (or did not load in time); details are in the log."""


def _opened(make: Callable[[], Path], open_: Callable[[Path], T]) -> tuple[Path, T]:
    """The exported file `make` gives, opened; one that cannot be opened (truncated,
    overwritten) is removed and made again, once."""
    from ikario_rag import model

    path = make()
    try:
        return path, open_(path)
    except Exception as exc:
        log.error("cannot open the embedding model %s (%s): making it again", path, exc)
        model.discard(path)
        path = make()
        return path, open_(path)


class Embedder:
    def __init__(self) -> None:
        self._ready = threading.Event()
        self._error: str | None = None
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._tokenizer = None
        self._query_session = None
        self._batch_session = None
        # The quantised batch sessions (one thread each, one per batch thread): opened on
        # first use (False: they failed to open), with a one-thread session of the same file
        # for the queries and the records a search embeds first.
        self._quantised_session: tuple | bool | None = None
        self._quantised_query_session = None
        self._quantised_lock = threading.Lock()
        self._batch_runner: ThreadPoolExecutor | None = None
        # The batch threads beside the batch runner's, for the quantised sessions after the
        # first (opened with them).
        self._partners: ThreadPoolExecutor | None = None
        # A search's second quantised query text runs here, beside the first (at the
        # caller's priority, unlike the batch threads). None on one core.
        self._query_partner = (
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed-query-partner")
            if (os.cpu_count() or 1) > 1
            else None
        )
        self._output = ""
        self._model_path: Path | None = None
        # Queries running now; a batch slice starts only when there are none.
        self._queries = 0
        self._no_query = threading.Condition()
        # The RunOptions of the batch slice running now (None between slices), to cancel it.
        self._slice_run: object | None = None
        self.cancelled_slices = 0
        # Per embedder (a cache on the class would outlive it); a failure is not cached.
        self._query_cache: OrderedDict[tuple[bool, str], np.ndarray] = OrderedDict()
        self._query_cache_lock = threading.Lock()

    def start(self) -> Embedder:
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._load, name="embedder-load", daemon=True
                )
                self._thread.start()
        return self

    def _load(self) -> None:
        try:
            config.quiet_libraries()  # offline by rule: nothing may be downloaded
            import onnxruntime

            from ikario_rag import model

            weights = model.weights_dir()
            tokenizer = model.tokenizer(weights)  # each slice is padded to its own longest
            # One thread for a query: on two shared, busy cores a second thread makes a
            # one-query encode many times slower (bench/embed_threads.py).
            path, self._query_session = _opened(
                lambda: model.ensure_model(weights),
                lambda p: _session(onnxruntime, p, config.settings().query_threads),
            )
            # Batches run on a thread of lower priority whose session's pool threads inherit
            # it: they take both cores when nothing else wants them and yield at once to a
            # query or to the web app (measured: bench/background_work.py).
            self._batch_runner = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="embed-batch", initializer=lower_thread_priority
            )
            threads = config.settings().batch_threads
            self._batch_session = self._batch_runner.submit(
                _session, onnxruntime, path, threads
            ).result()
            self._output = model.OUTPUT
            self._model_path = Path(path)
            self._tokenizer = tokenizer
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
        return "loaded" if self._tokenizer is not None else "failed"

    @property
    def ready(self) -> bool:
        return self._ready.is_set() and self._tokenizer is not None

    def wait_loaded(self, timeout: float) -> bool:
        """Whether loading has finished (successfully or not) within `timeout` seconds."""
        self.start()
        return self._ready.wait(timeout)

    def wait(self, timeout: float = 120.0) -> None:
        self.start()
        if not self._ready.wait(timeout):
            raise EmbeddingUnavailable("the embedding model is still loading")
        if self._tokenizer is None:
            raise EmbeddingUnavailable("the embedding model failed to load")

    def encode(self, texts: list[str], *, quantised: bool = False) -> np.ndarray:
        """Unit-length float32 vectors, one row per text (one text: the query path).
        `quantised`: with the quantised model, for an index whose vectors it writes
        (Memory.quantised): a record embedded in an add or an edit must be comparable with
        the ones the indexer wrote, and searched with the same model."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        self.wait()
        if len(texts) == 1:
            return self.encode_query(texts[0], quantised=quantised)
        return self.encode_batch(texts, quantised=quantised)

    def encode_query(self, text: str, *, quantised: bool = False) -> np.ndarray:
        """One text, at once, on the caller's thread; a running batch slice is cancelled (shape
        (1, DIMENSIONS)). `quantised`: with the quantised model (a search of an index it
        wrote, or a record of it embedded before a search, as the indexer would embed it)."""
        return self.encode_queries([text], quantised=quantised)

    def encode_queries(self, texts: Sequence[str], *, quantised: bool = False) -> np.ndarray:
        """A few query texts in one forward pass of the query session (quantised: one run
        each), at once, on the caller's thread; a running batch slice is cancelled (shape
        (len(texts), DIMENSIONS)). For the handful of texts of one search: many texts belong
        to `encode_batch`."""
        return self._query_run(texts, quantised=quantised)

    def _query_run(self, texts: Sequence[str], *, quantised: bool) -> np.ndarray:
        self.wait()
        session = self._query_session
        if quantised:
            session = self._quantised_query() or session
        with self._no_query:
            self._queries += 1
            if self._slice_run is not None:
                self._slice_run.terminate = True
        try:
            ids = [self._tokenizer.encode(t).ids for t in texts]
            if session is not self._query_session:  # quantised: one text per run (encode_batch)
                return self._runs_side_by_side(session, ids)
            return self._run(session, ids)
        finally:
            with self._no_query:
                self._queries -= 1
                if not self._queries:
                    self._no_query.notify_all()

    def _runs_side_by_side(self, session, ids: list[list[int]]) -> np.ndarray:
        """One run per text on the one-thread `session`, the texts shared between this thread
        and the query partner thread, which run at once (a session runs several calls at
        once, each on its caller's thread, and releases the GIL meanwhile; see _share). A
        search's question and its form with a speaker said as "I" then cost about one run
        on two cores instead of two in a row; on a busy machine the work is the same, only
        shared differently."""
        if len(ids) == 1 or self._query_partner is None:
            return np.concatenate([self._run(session, [i]) for i in ids])
        return self._share(self._query_partner, (session, session), ids)

    def query_vector(self, text: str, *, quantised: bool = False) -> np.ndarray:
        """A search query's unit vector, read-only: the cache hands the same array to every
        caller that asks the same query."""
        return self.query_vectors([text], quantised=quantised)[0]

    def query_vectors(self, texts: Sequence[str], *, quantised: bool = False) -> list[np.ndarray]:
        """The read-only unit vectors of a search's query texts, in order: those not cached
        are embedded together (fp32: in one forward pass). `quantised`: with the quantised
        model, for an index whose vectors it wrote (Memory.quantised)."""
        keys = [(quantised, t) for t in texts]
        with self._query_cache_lock:
            found = {k: self._query_cache.get(k) for k in keys}
            for key, vector in found.items():
                if vector is not None:
                    self._query_cache.move_to_end(key)
        missing = [k for k, v in found.items() if v is None]
        if missing:
            fresh = self.encode_queries([t for _, t in missing], quantised=quantised)
            with self._query_cache_lock:
                for key, vector in zip(missing, fresh, strict=True):
                    vector.flags.writeable = False
                    found[key] = vector
                    self._query_cache[key] = vector
                while len(self._query_cache) > QUERY_CACHE:
                    self._query_cache.popitem(last=False)
        return [found[k] for k in keys]

    def fixed_vectors(self, texts: tuple[str, ...]) -> np.ndarray:
        """The vectors of texts that never change, stored beside the model file the first
        time: every later start reads 90 KB instead of embedding them again (relevance's
        bank: ~0.4 s of ONNX at low priority, seconds on a busy machine, on the path of a
        server's first search). Equal to `encode(list(texts))`: they are what it returned."""
        self.wait()
        assert self._model_path is not None
        digest = hashlib.sha256("\n".join(texts).encode("utf-8", "surrogatepass")).hexdigest()
        path = self._model_path.with_name(f"{self._model_path.stem}.fixed-{digest[:16]}.npy")
        try:
            found = np.load(path, allow_pickle=False)
            if found.shape == (len(texts), DIMENSIONS) and found.dtype == np.float32:
                return found
        except (OSError, ValueError):  # none yet, or damaged: embed them again
            pass
        vectors = self.encode(list(texts))
        _store(path, vectors)
        return vectors

    def encode_batch(self, texts: list[str], *, quantised: bool = False) -> np.ndarray:
        """Many texts in length-sorted slices, each started only while no query runs;
        `quantised`: on the quantised model (an index built with its vectors), if it opens."""
        self.wait()
        session = self._batch_session
        if quantised:
            session = self._batch_runner.submit(self._quantised).result() or session
        ids = [e.ids for e in self._tokenizer.encode_batch(texts)]
        out = np.empty((len(ids), DIMENSIONS), dtype=np.float32)
        budget = SLICE_TOKENS
        if isinstance(session, tuple):
            # The quantised model one text per run (its activations are quantised with one
            # scale per run, so a text's vector would depend on the texts beside it, another
            # user's): a slice's texts are shared among its sessions, ~a slice's work each.
            budget = SLICE_TOKENS * len(session)
        for positions in slices([len(i) for i in ids], budget):
            rows = [ids[p] for p in positions]
            out[positions] = self._batch_runner.submit(self._run_slice, rows, session).result()
        return out

    def _quantised_query(self):
        """The quantised model's one-thread query session, opened (and the file made, once)
        on the caller's thread the first time, at its priority: a search waits for it, not
        for the batch thread. None if it failed: fp32 embeds the query instead."""
        with self._quantised_lock:
            if self._quantised_query_session is None:
                try:
                    import onnxruntime

                    from ikario_rag import model

                    path, self._quantised_query_session = _opened(
                        model.ensure_quantised,
                        lambda p: _session(onnxruntime, p, config.settings().query_threads),
                    )
                    log.info("quantised embedding model loaded from %s", path)
                except Exception:
                    log.exception("the quantised embedding model failed to load; using fp32")
                    self._quantised_query_session = False
            return self._quantised_query_session or None

    def _quantised(self):
        """The quantised batch sessions, opened on the batch thread the first time; None if
        that failed: the fp32 session does the work instead.

        One text per run, so a two-thread session would leave its second thread nearly idle
        (one short sequence splits badly): one one-thread session per batch thread instead,
        each running its share of a slice's texts beside the others. Measured on 40-token
        LoCoMo turns: 2 x 1 thread 545-634 texts/s, one session of 2 threads 368-369, one of
        1 thread 329-335 (bench/quantised_model.py)."""
        if self._quantised_session is None:
            try:
                import onnxruntime

                from ikario_rag import model

                if self._quantised_query() is None:  # made the file, or failed to
                    raise RuntimeError("the quantised model did not load")
                path = model.ensure_quantised()
                threads = config.settings().batch_threads
                if threads > 1:
                    self._partners = ThreadPoolExecutor(
                        max_workers=threads - 1,
                        thread_name_prefix="embed-batch-partner",
                        initializer=lower_thread_priority,
                    )
                self._quantised_session = tuple(
                    _session(onnxruntime, path, 1) for _ in range(threads)
                )
            except Exception:
                log.exception("the quantised batch sessions failed to open; using fp32")
                self._quantised_session = False
        return self._quantised_session or None

    def _run_slice(self, rows: list[list[int]], session=None) -> np.ndarray:
        """One slice on the batch session, started while no query runs; cancelled by a
        query that arrives meanwhile, then run again once that query is done."""
        import onnxruntime

        for attempt in range(MAX_CANCELS + 1):
            cancellable = attempt < MAX_CANCELS
            with self._no_query:
                self._no_query.wait_for(lambda: not self._queries)
                run = onnxruntime.RunOptions()
                self._slice_run = run if cancellable else None
            try:
                if isinstance(session, tuple):
                    return self._share(self._partners, session, rows, run)
                return self._run(session or self._batch_session, rows, run)
            except Exception:
                if not run.terminate:
                    raise  # a real failure, not a cancellation
                self.cancelled_slices += 1
            finally:
                with self._no_query:
                    self._slice_run = None
        raise AssertionError("unreachable: the last attempt cannot be cancelled")

    def _share(
        self, partners: ThreadPoolExecutor, sessions: tuple, rows: list[list[int]], run_options=None
    ) -> np.ndarray:
        """Each row in a run of its own, the rows shared among `sessions` (the same session
        may come twice: it runs calls at once): this thread runs the first session's share,
        `partners` the others'. A cancelled run (the shared `run_options`) stops every share."""
        out = np.empty((len(rows), DIMENSIONS), dtype=np.float32)

        def share(k: int) -> None:
            for pos in range(k, len(rows), len(sessions)):
                if run_options is not None and run_options.terminate:
                    raise RuntimeError("slice cancelled")
                out[pos] = self._run(sessions[k], [rows[pos]], run_options)[0]

        others = [partners.submit(share, k) for k in range(1, len(sessions))]
        try:
            share(0)
        finally:
            # Never return (or run the slice again) while a partner still runs its share.
            failures = [f.exception() for f in others]
        for failure in failures:
            if failure is not None:
                raise failure
        return out

    def _run(self, session, rows: list[list[int]], run_options=None) -> np.ndarray:
        width = max(len(r) for r in rows)
        input_ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for pos, row in enumerate(rows):
            input_ids[pos, : len(row)] = row
            mask[pos, : len(row)] = 1
        feed = {
            "input_ids": input_ids,
            "attention_mask": mask,
            "token_type_ids": np.zeros_like(input_ids),
        }
        return np.asarray(session.run([self._output], feed, run_options)[0], dtype=np.float32)


def slices(lengths: list[int], budget: int) -> list[list[int]]:
    """Positions grouped shortest first, each group padded (count x longest) within `budget`
    tokens (a text longer than the budget is a group of its own)."""
    order = sorted(range(len(lengths)), key=lambda p: lengths[p])
    groups: list[list[int]] = []
    current: list[int] = []
    for pos in order:
        # Sorted ascending: this text is the group's longest once added.
        if current and (len(current) + 1) * lengths[pos] > budget:
            groups.append(current)
            current = []
        current.append(pos)
    if current:
        groups.append(current)
    return groups


def _store(path: Path, vectors: np.ndarray) -> None:
    """Write `vectors` to `path` whole or not at all (another server may read it at once)."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npy.tmp")
        with os.fdopen(fd, "wb") as out:
            np.save(out, vectors, allow_pickle=False)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide it from the other users of a cache
        os.replace(tmp, path)
        tmp = None
    except OSError:  # a read-only cache: embedded at every start
        log.warning("could not store fixed vectors in %s", path.parent, exc_info=True)
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def lower_thread_priority() -> None:
    """Lower this thread's priority (nice IKARIO_BATCH_NICE, default 10): on Linux a nice
    value is per thread, and threads started from this one inherit it."""
    if sys.platform != "linux":
        return  # elsewhere it would lower the whole process, queries included
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), config.settings().batch_nice)
    except OSError:
        log.warning("could not lower the batch embedding thread's priority", exc_info=True)


def _session(onnxruntime, path, threads: int):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Idle pool threads sleep instead of spinning: a spinning thread on a busy shared core
    # steals the time the other thread needs.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
