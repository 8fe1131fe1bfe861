"""Shared fixtures live in tests/fixtures/, one module per real part they stand up."""

pytest_plugins = [
    "tests.fixtures.users",
    "tests.fixtures.fake_anthropic",
    "tests.fixtures.memory_server",
    "tests.fixtures.browser",
    "tests.fixtures.extensions",
    "tests.fixtures.redis_server",
    "tests.fixtures.postgres_server",
]
