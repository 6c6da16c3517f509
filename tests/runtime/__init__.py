"""Runtime tests. Puts the repo root on sys.path so ``tests.apps`` imports as the server imports it."""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
