"""A serving process shares its interpreter between searches and bulk work on threads."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_serving_process_hands_the_interpreter_over_within_a_millisecond():
    # In a process of its own: the interval is the whole interpreter's.
    code = (
        "import sys; from ikario_rag import cli; cli.share_the_interpreter(); "
        "print(sys.getswitchinterval())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert float(done.stdout) <= 0.001
