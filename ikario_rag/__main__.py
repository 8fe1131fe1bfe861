"""`python -m ikario_rag [serve options]`, `python -m ikario_rag reindex` or `export-model`."""

import sys

from ikario_rag.cli import main

sys.exit(main())
