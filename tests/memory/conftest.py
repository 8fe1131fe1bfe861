"""Memory tests share one real ikario_rag server with the whole session."""

import pytest


@pytest.fixture(autouse=True)
def patient_retrieval(settings):
    """The app gives auto-retrieval 2 s; a busy CI machine can take longer for a search that
    normally takes 40 ms, which would turn memory assertions into flakes. Tests about the
    timeout itself set their own."""
    settings.MEMORY_RETRIEVAL_TIMEOUT = 10.0
