"""The user's folders: the cache (what grade_kit builds once and reuses across runs: the chart
libraries inlined in each report page, the demo fixtures outside a checkout) and the keys of
blind grading sheets (kept out of the folder a notebook server shows its graders)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/grade_kit`` (default ``~/.cache/grade_kit``); not created here."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "grade_kit"


KEYS_ENV = "GRADE_KIT_KEYS"
"""Names the folder of blind-grading keys (:func:`keys_dir`) instead of the default."""


def keys_dir() -> Path:
    """Where a grading panel writes a new sheet's key by default: ``$GRADE_KIT_KEYS``, else
    ``$XDG_DATA_HOME/grade_kit/keys`` (default ``~/.local/share/grade_kit/keys``), outside
    the folder JupyterLab serves its graders; not created here."""
    if os.environ.get(KEYS_ENV):
        return Path(os.environ[KEYS_ENV])
    root = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                           "share")
    return Path(root) / "grade_kit" / "keys"
