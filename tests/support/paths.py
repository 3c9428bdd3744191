"""Where the repository and the shared material (real Hive-written tables) are."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("LAKECTL_SHARED", REPO.parent / "shared"))
INTEROP = SHARED / "interop"
