"""tests/libs reuses tests/capi's helpers (capi_support): put that directory on sys.path
so that this directory's tests also run on their own (`pytest tests/libs`)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "capi"))
