"""``python -m floem``: the ``floem`` command (floem/cli.py)."""
import sys

from floem.cli import main

sys.exit(main())
