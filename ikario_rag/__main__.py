"""`python -m ikario_rag [serve options]` or `python -m ikario_rag reindex`."""

import sys

from ikario_rag.cli import main

sys.exit(main())
