"""Settings for the test suite: development settings, a fast password hasher.

ikario_clone/settings.py treats DEBUG off as production (a real SECRET_KEY, HTTPS redirect,
collected static files) and reads DEBUG while it is imported, so the suite asks for
development here, before that import, whatever the shell exports. pytest-django still runs
each test with settings.DEBUG = False, as production does. Tests that need production
settings start a subprocess with its own environment (tests/deploy/).
"""

import os

os.environ["DEBUG"] = "true"

from ikario_clone.settings import *  # noqa: E402, F403

# PBKDF2's 1,000,000 rounds cost ~200 ms per user created or password checked (measured
# with make_password on this machine); the suite creates hundreds.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Tests of other things call the memory API many times as one user (pks come back after
# each test's rollback, the counts would not): the fair shares are tested on their own
# (tests/memory/test_limits.py turns them on).
MEMORY_LIMITS_ENABLED = False

# Learning waits for a conversation to pause (memory/learning/conversations.py): the suite runs it
# at once.
MEMORY_LEARN_DELAY = 0.0

# SQLite runs through the app's own backend (ikario_clone/private_sqlite), which
# pytest-django does not recognise as SQLite: it would name each xdist worker's test
# database after the file's path ("test_/…/db.sqlite3_gw0", a folder that does not exist).
# Said explicitly, each worker keeps Django's in-memory test database.
if DATABASES["default"]["ENGINE"] == "ikario_clone.private_sqlite":  # noqa: F405
    DATABASES["default"].setdefault("TEST", {})["NAME"] = ":memory:"  # noqa: F405
