"""Per model, Inspect's own analysis (samples_df, evals_df) with the later complete sample
winning, against grade_kit's figures."""
import json, sys
from pathlib import Path
import pandas as pd
from inspect_ai.analysis import evals_df, samples_df

logs = [str(p) for d in sys.argv[1:] for p in sorted(Path(d).glob("*.eval"))]
ev = evals_df(logs)
sm = samples_df(logs)
sm = sm.merge(ev[["eval_id", "created", "task_name", "model", "dataset_name"]], on="eval_id",
              suffixes=("", "_e"))
score_cols = [c for c in sm.columns if c.startswith("score_")]
out = {}
for (model, task), g in sm.groupby(["model", "task_name"]):
    g = g.sort_values("created")
    g["complete"] = g["error"].isna() | (g["error"] == "")
    rows = []
    for (sid, epoch), s in g.groupby(["id", "epoch"]):
        done = s[s["complete"]]
        rows.append((done if len(done) else s).iloc[-1])
    chosen = pd.DataFrame(rows)
    col = next(c for c in score_cols if chosen[c].notna().any())
    vals = chosen[col]
    def num(v):
        return {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}.get(v, v) if isinstance(v, str) else v
    numeric = [float(num(v)) for v in vals if v is not None and v == v]
    out[f"{model} | {task}"] = {
        "samples": len(chosen), "resolved": int(sum(1 for v in vals if num(v) == 1.0)),
        "limits": int(chosen["limit"].notna().sum() if "limit" in chosen else 0),
        "errors": int((~chosen["complete"]).sum()),
        "mean_score": sum(numeric) / len(numeric) if numeric else None}
print(json.dumps(out, indent=1))
