"""The user's cache folder: what grade_kit builds once and reuses across runs (the chart
libraries inlined in each report page, the demo fixtures outside a checkout)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/grade_kit`` (default ``~/.cache/grade_kit``); not created here."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "grade_kit"
