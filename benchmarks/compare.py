"""``make bench-compare``: for each kind of figures (``make bench``: ``<time>.json``;
``make bench-scale``: ``scale-<time>.json``; ``make bench-store``: ``store-<time>.json``), the
two newest files side by side, with the ratio new / old of each stage's (or measurement's)
time per input size."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
KINDS = {"bench": "", "scale": "scale-", "store": "store-"}


def _files(prefix: str) -> list[Path]:
    """The figure files of one kind, oldest first (names carry their time)."""
    return sorted(p for p in RESULTS.glob(f"{prefix}*.json")
                  if not any(p.name.startswith(other) for other in KINDS.values()
                             if other and other != prefix))


def _line(name: str, old: float, new: float, extra: str = "") -> str:
    return f"    {name:<55} {old:8.2f} s -> {new:8.2f} s  x{new / old:.2f}{extra}"


def _stages(before: dict[str, Any], size: dict[str, Any]) -> None:
    old_stages = {s["stage"]: s for s in before["stages"]}
    for stage in size["stages"]:
        was = old_stages.get(stage["stage"])
        if was is not None and was["seconds"]:
            print(_line(stage["stage"], was["seconds"], stage["seconds"]))
    print(_line("end to end", before["end_to_end_s"], size["end_to_end_s"]))


def _measurements(before: dict[str, Any], size: dict[str, Any]) -> None:
    for kind in ("pack", "store", "store-2-workers", "memory"):
        was, now = before.get(kind), size.get(kind)
        if was and now and was["seconds"]:
            print(_line(kind, was["seconds"], now["seconds"],
                        f"  (peak RSS {was['peak_rss_mb']:,} -> {now['peak_rss_mb']:,} MB)"))


def main() -> int:
    compared = 0
    for kind, prefix in KINDS.items():
        files = _files(prefix)
        if len(files) < 2:
            continue
        old, new = (json.loads(p.read_text()) for p in files[-2:])
        print(f"{kind}: old {files[-2].name} ({old['commit']})   new {files[-1].name} "
              f"({new['commit']})")
        if old.get("environment") != new.get("environment"):
            print(f"  (taken in different environments: old {old.get('environment')}, "
                  f"new {new.get('environment')}; see docs/scaling.md history)")
        old_sizes = {s["runs"]: s for s in old["sizes"]}
        for size in new["sizes"]:
            before = old_sizes.get(size["runs"])
            if before is None:
                continue
            print(f"  {size['runs']:,} runs")
            (_stages if "stages" in size else _measurements)(before, size)
        compared += 1
    if not compared:
        print(f"bench-compare: need two figure files of one kind in {RESULTS} (run `make "
              "bench`, `make bench-scale` or `make bench-store` twice)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
