"""Shared fixtures live in tests/fixtures/, one module per real part they stand up."""

import contextlib
import subprocess

import pytest

pytest_plugins = [
    "tests.fixtures.users",
    "tests.fixtures.fake_anthropic",
    "tests.fixtures.memory_server",
    "tests.fixtures.browser",
    "tests.fixtures.extensions",
    "tests.fixtures.redis_server",
    "tests.fixtures.postgres_server",
]


# --- the two layers ------------------------------------------------------------------------
# The fast layer (`make check`: pytest -m "not integration") is rules, predicates, forms and
# views: no memory server, no browser, no process of its own, no Redis or Postgres. Every
# test that stands one of those up is marked `integration` here, from what it uses, so no
# test file has to say it; `make test` runs both layers.
INTEGRATION_FIXTURES = {
    "memory_server",  # a real ikario_rag over HTTP (tests/fixtures/memory_server.py)
    "no_memory_server",  # a memory URL where nothing answers
    "own_memory_server",  # a test's own ikario_rag over HTTP, on its own index
    "app_server",  # Daphne in a process of its own (tests/fixtures/browser.py)
    "app_server_with_memory",
    "page",  # headless Chromium
    "redis_server",
    "own_redis",  # a redis-server a test stops and starts again
    "postgres_url",
    "embedder",  # the embedding model, loaded in process: the ikario_rag server's parts
    "torch_embedder",
    "shared_server",  # ikario_rag over stdio (tests/ikario_rag/stdio.py)
    "spawn",
    "own_server",  # tests/memory's servers of a test's own: slow, gated, damaged
    "slow_server",
    "slow_memory",
    "gated",
    "second_server",
    "short_idle_server",
}
INTEGRATION_DIRS = ("deploy", "scale")
# Modules whose tests start processes of their own (a server script, manage.py, msgfmt,
# Daphne) without one of the fixtures above; the guard below fails any other that does.
# A test's node id may be named alone (its module's other tests stay fast).
INTEGRATION_MODULES = {
    "tests/chat/test_abandoned_answers.py",  # a pid known dead: a process that ended
    "tests/chat/test_consumers.py::test_it_settles_an_abandoned_answer_as_stopped_with_retry",
    "tests/ikario_rag/test_access.py",
    "tests/ikario_rag/test_config.py::test_the_command_line_exits_misconfigured_on_an_unreadable_port",
    "tests/ikario_rag/test_embed.py::test_it_exports_the_model_once_into_the_cache",
    "tests/ikario_rag/test_hostile_input.py",
    "tests/ikario_rag/test_imports.py::test_it_takes_the_index_lock_before_importing_the_mcp_sdk",
    "tests/ikario_rag/test_serving_process.py",
    "tests/ikario_rag/test_stdio.py",
    "tests/memory/test_jobs_at_once.py",
    "tests/memory/test_mcp_client.py",
    "tests/memory/test_notes.py::test_a_notes_root_naming_folders_by_username_stops_the_app_with_what_to_do",
    "tests/memory/test_saving_fails.py::test_the_indicator_says_saving_fails_and_why",
    "tests/memory/test_turn.py::test_it_recalls_a_memory_in_another_conversation_of_the_same_user_only",
    "tests/memory/test_worker.py::test_it_puts_back_a_task_whose_worker_died_on_this_host",
    "tests/memory/test_worker.py::test_a_running_worker_puts_back_a_dead_workers_task_without_a_restart",
    "tests/memory/test_workers_on_postgres.py",
    "tests/memory/test_worker_crash.py",
    "tests/memory/test_worker_database.py::test_the_worker_waits_out_a_locked_and_a_moved_database_then_runs_tasks",
    "tests/test_fair_shares.py",
    "tests/test_net.py::test_it_starts_again_on_a_new_port_when_another_process_took_the_first",
    "tests/test_translations.py::test_it_has_every_string_marked_in_the_code_in_the_catalogue",
}


def pytest_collection_modifyitems(config, items):
    root = config.rootpath
    for item in items:
        where = item.path.relative_to(root).as_posix()
        if (
            INTEGRATION_FIXTURES.intersection(item.fixturenames)
            or item.get_closest_marker("browser")
            or item.get_closest_marker("scale")
            or where.split("/")[1] in INTEGRATION_DIRS
            or where in INTEGRATION_MODULES
            or f"{where}::{item.originalname}" in INTEGRATION_MODULES
        ):
            item.add_marker(pytest.mark.integration)


def _refused(*args, **kwargs):
    raise AssertionError(
        "this test starts a process: it belongs to the integration layer "
        "(INTEGRATION_MODULES or INTEGRATION_FIXTURES in tests/conftest.py)"
    )


@contextlib.contextmanager
def _no_process_unless_integration(item):
    """A test of the fast layer that starts a process, itself or through a fixture of any
    scope it sets up, fails, saying where it belongs."""
    if item.get_closest_marker("integration") is not None:
        yield
        return
    real = subprocess.Popen.__init__
    subprocess.Popen.__init__ = _refused
    try:
        yield
    finally:
        subprocess.Popen.__init__ = real


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    with _no_process_unless_integration(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    with _no_process_unless_integration(item):
        yield
