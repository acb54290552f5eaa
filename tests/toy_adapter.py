"""A test adapter, written as a user would write one outside grade_kit: a "toy log" is a
text file whose first line is ``TOYLOG <model>`` and whose other lines are
``question | prompt | answer | outcome`` (outcome resolved, partial or unresolved; a repeat
of a question is its next repeat). It touches no grade_kit file: registering it makes
grade_kit sniff, score and import its files like the built-in logs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from grade_kit.adapters import Adapter, FileHead, Imported, grade_for_outcome
from grade_kit.reading.io import Rejected
from grade_kit.schema import Run, Task

MARK = "TOYLOG "


def read_toy_log(path: Path, setup: str | None, options: Mapping[str, Any]) -> Imported:
    lines = path.read_text(encoding="utf-8").splitlines()
    model = lines[0].removeprefix(MARK).strip()
    setup = setup or model
    out = Imported(label=path.name, model=model)
    tasks: dict[str, Task] = {}
    repeats: dict[str, int] = {}
    for number, line in enumerate(lines[1:], start=2):
        fields = [part.strip() for part in line.split("|")]
        if len(fields) != 4 or fields[3] not in ("resolved", "partial", "unresolved"):
            out.rejected.append(Rejected(str(path), number, "outcome",
                                         "not question | prompt | answer | outcome", line))
            continue
        question, prompt, answer, outcome = fields
        tasks.setdefault(question, Task(task_id=question, prompt=prompt))
        repeats[question] = repeats.get(question, 0) + 1
        run_id = f"{setup}/{question}/{repeats[question]}"
        out.runs.append(Run.model_validate({
            "run_id": run_id, "setup": setup, "task_id": question,
            "repeat": repeats[question], "status": "delivered",
            "response": {"text": answer}}))
        out.grades.append(grade_for_outcome(run_id, outcome, "toy log", f"toy: {outcome}"))
    out.tasks = list(tasks.values())
    return out


def is_toy_log(head: FileHead) -> bool:
    return head.zip_names is None and head.text.startswith(MARK)


TOY = Adapter(name="toy", describes="a toy log", suffixes=(".toylog",),
              recognises=is_toy_log, read=read_toy_log)
