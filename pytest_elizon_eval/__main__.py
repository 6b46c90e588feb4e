"""``python -m pytest_elizon_eval``: the ``elizon-eval`` command (see :mod:`.cli`)."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
