"""``make bench-compare``: the two newest ``benchmarks/results/*.json`` side by side, with the
ratio of each stage's time (new / old) per input size."""

from __future__ import annotations

import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> int:
    files = sorted(RESULTS.glob("*.json"))
    if len(files) < 2:
        print(f"bench-compare: need two figure files in {RESULTS} (run `make bench` twice)")
        return 1
    old, new = (json.loads(p.read_text()) for p in files[-2:])
    print(f"old: {files[-2].name} ({old['commit']})   new: {files[-1].name} ({new['commit']})")
    old_sizes = {s["runs"]: s for s in old["sizes"]}
    for size in new["sizes"]:
        before = old_sizes.get(size["runs"])
        if before is None:
            continue
        print(f"{size['runs']:,} runs")
        old_stages = {s["stage"]: s for s in before["stages"]}
        for stage in size["stages"]:
            was = old_stages.get(stage["stage"])
            if was is None or not was["seconds"]:
                continue
            print(f"    {stage['stage']:<55} {was['seconds']:8.2f} s -> {stage['seconds']:8.2f} s"
                  f"  x{stage['seconds'] / was['seconds']:.2f}")
        ratio = size["end_to_end_s"] / before["end_to_end_s"]
        print(f"    {'end to end':<55} {before['end_to_end_s']:8.2f} s -> "
              f"{size['end_to_end_s']:8.2f} s  x{ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
