"""Where the tests' material is, stated once: the checkout's root and its folders (a test
file's own depth in tests/ never decides it)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
EXAMPLE = FIXTURES / "example"
DATA = ROOT / "tests" / "data"
REALDATA = DATA / "realdata"
