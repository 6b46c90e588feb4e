"""The one lock around imports the plugin makes while cases run (docs/contract.md#imports).

Binding imports a package's entry module with the package's folder first on ``sys.path``
and the package's own modules of the same names taken out of ``sys.modules`` for the time
of the import. Any other import made then, on another thread, could find that folder's
modules instead of the ones ``sys.path`` names without it: every such import takes
:data:`IMPORT_LOCK`. It lives here, below ``bind/``, so that ``run/`` modules that import
on a case's thread (``elizon_retry_on``'s classes) share it without importing ``bind/``.
No pytest import here.
"""

from __future__ import annotations

import importlib
import threading
from types import ModuleType

__all__ = ["IMPORT_LOCK", "import_module"]

IMPORT_LOCK = threading.Lock()


def import_module(name: str) -> ModuleType:
    """``importlib.import_module(name)``, never while a package's import has its folder first
    on ``sys.path`` and its own modules of the name taken out (the same lock): a module
    imported on a case's thread (``elizon_retry_on``'s) is then the one ``sys.path`` names
    without any package's folder."""
    with IMPORT_LOCK:
        return importlib.import_module(name)
