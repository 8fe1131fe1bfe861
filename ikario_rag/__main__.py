import sys

from ikario_rag.cli import main

sys.exit(main())
