"""The installed version of grade_kit (pyproject.toml states it; written into every
results.json's provenance)."""

from importlib.metadata import version

__version__ = version("grade_kit")
