# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export ANONYMIZED_TELEMETRY := False

.PHONY: install run test test-stress lint messages gettext screenshots bench bench-chat bench-memory bench-client bench-retrieval bench-background bench-reply bench-search bench-quality bench-consistency bench-faults bench-fairness bench-workers bench-notes bench-scale test-scale chromium redis postgres

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# The pinned CPU wheel first: any other torch spec pulls GBs of CUDA packages.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[dev]"
	# The embedding model to ONNX, once, offline (into ~/.cache/ikario_rag): no server
	# start pays for it.
	$(BIN)/python -m ikario_rag export-model
	touch $(STAMP)

install: $(STAMP)

chromium:
	@test -x /usr/bin/chromium || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)

# GNU gettext: `make messages` runs it; the tests check the French catalogue with it.
gettext:
	@command -v xgettext >/dev/null || (apt-get update -qq && apt-get install -y -qq gettext >/dev/null)

# The French catalogue: every string marked in the code into locale/fr/LC_MESSAGES/django.po
# (translate the new, empty msgstr there), then the compiled django.mo, which is committed:
# running the app needs no gettext. tests/test_translations.py fails while either is stale.
messages: $(STAMP) gettext
	$(BIN)/python manage.py makemessages -l fr --no-location --no-obsolete \
		-i "bench/*" -i "tests/*" -i "ikario_rag/*" -i "staticfiles/*"
	$(BIN)/python manage.py compilemessages -l fr

# The RQ tests start a real Redis of their own on a free port.
redis:
	@command -v redis-server >/dev/null || (apt-get update -qq && apt-get install -y -qq redis-server >/dev/null)

# chat's search on Postgres is tested against a real server started in a temp dir.
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq postgresql >/dev/null)

# Development settings (debug pages, the development SECRET_KEY, plain HTTP): DEBUG off is
# production, see the README. Three processes from the Procfile, under honcho: the web app,
# the worker (`manage.py db_worker`, at a lower priority) and the memory server over HTTP;
# each reaches the memory server by the URL and token written into .env. One that stops is
# started again (ikario_clone/restart.py); Ctrl+C stops all three.
run: export DEBUG := true
run: $(STAMP)
	@# Development defaults for this checkout, so manage.py commands beside it need no set-up;
	@# build/run.env is what honcho adds to the shell's variables (the shell wins: WEB_PORT=…).
	@test -f .env || cp .env.example .env
	$(BIN)/python -m ikario_clone.local_env .env build/run.env
	@# The database is made and kept private by the app itself (ikario_clone/private_sqlite).
	umask 077 && $(BIN)/python manage.py migrate --noinput
	@echo "Starting web, worker and memory; one that stops is started again (Ctrl+C stops all)."
	umask 077 && PATH="$(abspath $(BIN)):$$PATH" $(BIN)/honcho start -f Procfile -e build/run.env

test: $(STAMP) chromium redis postgres gettext
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	# Two workers (pytest-xdist), each with its own test DB, temp index, memory server and
	# fake API: the suite's time is mostly servers starting, which overlap (docs/BENCHMARKS.md).
	$(BIN)/python -m pytest -n 2

# The proof that no test depends on the machine's speed: the whole suite three times in a
# row, two CPU-bound processes running beside it.
test-stress: $(STAMP) chromium redis postgres gettext
	$(BIN)/ruff check .
	$(BIN)/python bench/suite_under_load.py --rounds 3 --burners 2

# The screens a newcomer meets with a lived-in account (50 chats, a recall log, an
# edited profile, memories), desktop and phone, EN and FR, into docs/screenshots/.
screenshots: $(STAMP) chromium
	$(BIN)/python bench/screenshots.py

# The README's "Past one machine" topology on loopback, every part a real process (Postgres,
# Redis, a Chroma server, two memory servers, two Daphnes, an RQ worker): what works across
# processes, then each part killed under load, nothing lost, duplicated or left streaming.
test-scale: $(STAMP) redis postgres
	$(BIN)/python -m pytest tests/scale -m scale

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: bench-chat bench-memory bench-client bench-retrieval bench-background bench-reply bench-search bench-quality bench-consistency bench-fairness bench-learning bench-learning-pipeline bench-notes bench-workers bench-scale bench-secrets

bench-chat: $(STAMP)
	$(BIN)/python bench/chat_turn.py
	$(BIN)/python bench/chat_page.py

# SIZES=10000,100000 for the 100k figures too (~15 more minutes); BASELINE=DIR pairs every
# latency with another checkout's server (e.g. `git archive main | tar -x -C /tmp/main`).
SIZES ?= 10000
bench-memory: $(STAMP)
	$(BIN)/python bench/locomo_recall.py
	$(BIN)/python bench/memory_latency.py --sizes $(SIZES) $(if $(BASELINE),--baseline $(BASELINE))
	$(BIN)/python bench/cold_start.py $(if $(BASELINE),--baseline $(BASELINE))

bench-client: $(STAMP)
	$(BIN)/python bench/client_overhead.py
	$(BIN)/python bench/memory_restart.py --rounds 3 --down 20

bench-retrieval: $(STAMP)
	$(BIN)/python bench/auto_retrieval.py

# Recall quality beside the previous release's figures (bench/quality/before.json):
# auto-recall (dev and held-out, EN/FR), dedup, contradictions, LoCoMo (about 10 minutes).
bench-quality: $(STAMP)
	$(BIN)/python bench/quality.py

# The consistency check on its 120-pair EN/FR set: offline, and through the model judge's
# pipeline with a scripted judge (about a minute).
bench-consistency: $(STAMP)
	$(BIN)/python bench/consistency.py

# What chats teach and whether it is in front of the model when a new chat needs it, end to
# end (JSON API, worker, memory server over HTTP, fake model), offline and with a scripted
# perfect extractor, on bench/learning/devset.json (a few minutes); then what the rules alone
# learn on bench/quality/learning_dev.json and the held-out set (a second).
.PHONY: bench-learning
bench-learning: $(STAMP)
	$(BIN)/python bench/learning/run.py
	$(BIN)/python bench/learning.py --heldout

# What one-exchange chats teach, through the whole pipeline (turn, delayed task, scripted
# extraction model, ikario_rag), recalled in new chats; time from the answer to the fact.
.PHONY: bench-learning-pipeline
bench-learning-pipeline: $(STAMP)
	$(BIN)/python bench/learning_pipeline.py

# Secrets kept out of memory and look-alikes kept, through the real server's add path
# (bench/quality/secrets_*.json).
.PHONY: bench-secrets
bench-secrets: $(STAMP)
	$(BIN)/python bench/secrets_kept_out.py

bench-background: $(STAMP)
	$(BIN)/python bench/background_work.py
	$(BIN)/python bench/extraction_samples.py

# A reply as a user feels it (a paced scripted model, a tool call, the app as plain processes),
# the worker idle against busy saving and extracting (about 10 minutes). REPLIES=40 for a
# tighter interval; CODE=DIR runs another checkout's app (e.g. `git archive main | tar -x -C DIR`).
REPLIES ?= 20
bench-reply: $(STAMP)
	$(BIN)/python bench/realistic_reply.py --replies $(REPLIES) $(if $(CODE),--code $(CODE))

# Each fault (memory server, worker or Daphne killed, index removed, database damaged, disk
# full, model export removed or damaged) done to the running app: what the user sees, what
# was lost. The disk-full row mounts a small tmpfs (root only; skipped otherwise).
bench-faults: $(STAMP)
	$(BIN)/python bench/fault_matrix.py

# Jobs/s of RQ workers (1, 2, 4): RQ's forking worker against ours (memory/worker/rq.py).
bench-workers: $(STAMP) redis
	$(BIN)/python bench/worker_throughput.py --jobs 200 --runs 3

# The memory tier alone (searches/s of one memory server, then two), then the same
# topology under 40 users for 60 s: one memory server against two (the ratio),
# then the fault matrix (Redis, Postgres, a memory server, the worker, a Daphne killed and
# started again under load; what was lost, duplicated, left streaming). About 20 minutes.
bench-scale: $(STAMP) redis postgres
	$(BIN)/python bench/memory_tier.py --users 40 --seconds 30
	$(BIN)/python bench/scale_out.py --users 40 --seconds 60
	$(BIN)/python bench/scale_out.py --faults --users 40 --seconds 60 --workers 4

bench-search: $(STAMP)
	$(BIN)/python bench/past_chats.py

# A generated 5,000-note vault: its first sync (notes/s) and a re-sync after one note
# changed (time, notes read); a few minutes.
bench-notes: $(STAMP)
	$(BIN)/python bench/notes_vault.py

# Bob's recall and chat while alice loads the memory with 50 threads (about 5 minutes);
# BASELINE=DIR runs the same against another checkout's app and server.
bench-fairness: $(STAMP)
	$(BIN)/python bench/fairness.py $(if $(BASELINE),--code $(BASELINE)) $(if $(FLOOD),--flood)
