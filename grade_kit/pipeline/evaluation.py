"""One call from inputs to every number: :func:`evaluate` (and :func:`reopen` of what it
wrote), the pipeline's orchestration and nothing else.

``grade-kit score``, ``grade-kit demo``, the benchmark and the notebooks all go through
:func:`evaluate`; nothing else assembles the pipeline: read (:mod:`grade_kit.reading`) ->
judge and grade (:mod:`grade_kit.judges`) -> flatten (:mod:`grade_kit.frames`) -> GRADE
scores (:mod:`grade_kit.scorers`) -> the standard's statistics and the typed results
(:func:`grade_kit.pipeline.scored.conclude`, which gives the
:class:`~grade_kit.pipeline.scored.Evaluation`).
A packed store, or run files too big for memory, go partition by partition
(:mod:`grade_kit.pipeline.partitioned`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, cast

import polars as pl

from grade_kit._gc import gc_paused
from grade_kit._progress import stage_progress
from grade_kit.adapters import read_log
from grade_kit.frames import EvalData
from grade_kit.judges import (
    Grader,
    Judge,
    new_grades,
    new_judgements,
    resolve_grader,
    resolve_judge,
)
from grade_kit.judges.rule_grader import RULE_GRADER
from grade_kit.pipeline.partitioned import (
    STORE_STAGES,
    MapPartitions,
    evaluate_store,
    evaluate_through_store,
    rule_grade_records,
)
from grade_kit.pipeline.scored import Evaluation, FrameKind, conclude
from grade_kit.pipeline.state import STATE_DIR, read_state
from grade_kit.reading._fastread import concat_records
from grade_kit.reading.inputs import Inputs, read_inputs
from grade_kit.reading.io import Records, input_files, is_in_memory
from grade_kit.reading.packed import (
    is_store,
    split_by_task,
)
from grade_kit.reading.prices import Prices, read_prices
from grade_kit.reading.records import load_grades, load_judgements, run_files
from grade_kit.reading.sniff import log_files
from grade_kit.schema import (
    Grade,
    InputError,
    Judgement,
)
from grade_kit.scorers import (
    ClaimJudge,
    combine_scores,
    grade_scores,
    partition_scores,
)
from grade_kit.standard import CLUSTERS, DEFAULT_SEED, Cluster


def reopen(folder: Path | str, *, frames: FrameKind | None = None) -> Evaluation:
    """The evaluation ``ev.write(folder)`` (or ``grade-kit score --out folder``) wrote, read
    back from its Parquet and JSON files without scoring again: the same frames, results
    and explanations (the run records are read only when something asks for them).

    Args:
        folder: An output folder of ``ev.write`` or ``grade-kit score``.
        frames: ``"polars"`` or ``"pandas"``; default the kind the evaluation had.

    Raises:
        InputError: when ``folder`` holds no evaluation state.
    """
    inputs, data, scores, standard, results, kind = read_state(folder)
    chosen = frames or kind
    if chosen not in ("polars", "pandas"):
        raise ValueError(f"frames must be 'polars' or 'pandas', not {chosen!r}")
    return Evaluation(inputs, data, scores, standard, results, cast(FrameKind, chosen))


_LAST_REOPENED: dict[str, Any] = {}
"""The evaluation :func:`reopen_or_evaluate` reopened last, and which writing of which folder."""


def _written(folder: Path) -> tuple[str, ...]:
    """Which writing of a scored folder: its path, and its state's and results' identity
    (inode, size and modification time: ``ev.write`` replaces both files)."""
    marks = [str(folder.resolve())]
    for path in (folder / STATE_DIR / "state.json", folder / "results.json"):
        try:
            stat = path.stat()
        except OSError:
            return ()  # nothing to remember: reopen says what is missing
        marks.append(f"{stat.st_ino}:{stat.st_size}:{stat.st_mtime_ns}")
    return tuple(marks)


def reopen_or_evaluate(scored: Path | str | None, tasks: Records | Inputs | None = None,
                       runs: Records | None = None, **options: Any) -> Evaluation:
    """What a notebook shows: the scored folder ``scored`` reopened (:func:`reopen`; ``grade-kit
    report`` scores once and passes it), or, without one, :func:`evaluate` of ``tasks`` and
    ``runs`` with ``options`` (a notebook opened on its own); with neither, the demo suite and
    its recorded runs (:func:`~grade_kit.demo.demo_fixtures`: the same wherever the notebook
    runs from).

    The same unchanged scored folder asked for again in one process is the same
    :class:`Evaluation`, not read again (a kernel that runs several of ``grade-kit report``'s
    notebooks reads it once); a folder written again since is read again.

    Raises:
        ValueError: with runs but no tasks.
    """
    if scored:
        key = _written(Path(scored))
        if _LAST_REOPENED.get("key") != key:
            _LAST_REOPENED.clear()
            _LAST_REOPENED.update(key=key, evaluation=reopen(scored))
        return cast(Evaluation, _LAST_REOPENED["evaluation"])
    if tasks is None:
        if runs is not None:
            raise ValueError("give the tasks of these runs (or a scored folder)")
        from grade_kit.demo import demo_fixtures

        fixtures = demo_fixtures()
        tasks, runs = fixtures / "tasks", fixtures / "runs"
    return evaluate(tasks, runs, **options)


def _inputs(tasks: Records | Inputs, runs: Records | None, judgements: Records | None,
            grades: Records | None, packs: Path | str | None) -> Inputs:
    if isinstance(tasks, Inputs):
        if runs is not None:
            raise ValueError("pass either one Inputs value or tasks and runs, not both")
        out = tasks
        if judgements is not None:
            loaded_j = load_judgements(judgements, out.runs)
            out = replace(out, judgements=concat_records(Judgement, out.judgements,
                                                         loaded_j.records),
                          rejected=[*out.rejected, *loaded_j.rejected],
                          files=[*out.files, *input_files("judgements", loaded_j.sources,
                                                          loaded_j.rejected)])
        if grades is not None:
            loaded_g = load_grades(grades, out.runs)
            out = replace(out, grades=concat_records(Grade, out.grades, loaded_g.records),
                          rejected=[*out.rejected, *loaded_g.rejected],
                          files=[*out.files, *input_files("grades", loaded_g.sources,
                                                          loaded_g.rejected)])
        return out
    if runs is None:
        try:  # Inspect or tau-bench logs given where tasks go (files or folders)
            logs = None if is_in_memory(tasks) else log_files(
                cast(Path | str | Sequence[Path | str], tasks))
        except ValueError as exc:
            raise InputError(str(exc)) from exc
        if logs is None:
            raise ValueError("runs are required (or pass one Inputs value, or other tools' "
                             "logs, as the first argument)")
        return _inputs(read_log(logs[1], source=logs[0]), None, judgements, grades, packs)
    return read_inputs(tasks, runs, judgements=judgements, grades=grades, packs=packs)


def evaluate(
    tasks: Records | Inputs,
    runs: Records | None = None,
    *,
    judgements: Records | None = None,
    grades: Records | None = None,
    judge: str | Judge | None = None,
    grader: str | Grader | None = None,
    claim_judge: ClaimJudge | None = None,
    repeats: int | None = None,
    packs: Path | str | None = None,
    frames: FrameKind = "polars",
    seed: int = DEFAULT_SEED,
    arguments: dict[str, Any] | None = None,
    exclude_channel_overhead: bool = False,
    map_partitions: MapPartitions | None = None,
    progress: bool = False,
    cluster: Cluster = "question",
    prices: Path | str | Mapping[str, Any] | Prices | None = None,
) -> Evaluation:
    """Read, judge and score an evaluation: GRADE scores, grades, timing, tool calls,
    comparisons, with every reject and warning (docs/methodology.md).

    Args:
        tasks: Folder of task files, a tasks JSONL file, task records, or one
            :class:`~grade_kit.reading.inputs.Inputs` value (then leave ``runs`` out).
        runs: Run JSONL file(s) or folder(s), or run records.
        judgements: Recorded judgements (files or records); default None.
        grades: Grade records (files or records); default None (every run ungraded).
        judge: ``"rules"`` (the offline rule judge) or a :class:`~grade_kit.judges.Judge`
            that fills the judged dimensions of every run with no recorded judgement (a
            recorded judgement always wins); default None (judged dimensions come only from
            recorded judgements, and a composite over fewer than six dimensions is warned).
        grader: ``"rules"`` (the offline rule grader, :mod:`grade_kit.judges.rule_grader`) writes
            a grade record for every delivered run of a GRADE task that has none recorded,
            or a :class:`~grade_kit.judges.Grader` (such as
            :class:`~grade_kit.judges.llm_grader.LLMGrader`) asked about every delivered run
            that has none recorded (a recorded one always wins); default None (runs without
            a record stay ``pending_verification``).
        claim_judge: Asked only about claims the deterministic match missed; default None.
        repeats: R, the planned repeats per question; default the R the sources state (an
            Inspect log's epochs, a tau2 file's trials) when they agree, else inferred (the
            largest repeat more than 5% of (setup, task) pairs reach; results say so).
        packs: Folder of packs for ``ground_truth`` keys; default found next to ``tasks``.
        frames: ``"polars"`` (default) or ``"pandas"``: the kind of every frame returned.
        seed: Seed of the comparison bootstrap; default 20261130.
        arguments: Recorded in the results' provenance (the CLI passes its arguments).
        exclude_channel_overhead: Subtract the channel overhead an agent reports (reply
            cards, link resolution) from E2E; default False (E2E = received - submitted).
            Every timing summary says which E2E it is (``e2e_definition``).
        map_partitions: How the GRADE map step runs: a ``map(function, jobs)`` such as
            ``ProcessPoolExecutor().map`` or a distributed engine's (docs/scaling.md). A
            store's partitions, or in-memory inputs split the same way by task (16 parts),
            are scored by it, then combined; the results are the same. Default None (a
            store: one partition after another; in memory: one pass).
        cluster: What the repeats are clustered by for every interval and paired test:
            ``"question"`` (default: the repeats of one question are one cluster),
            ``"track"`` or ``"pack"`` (docs/methodology.md §4 "Clusters").
        progress: Show a progress bar over the stages (reading, judging and grading when
            asked, GRADE scores, the standard's statistics, the typed results), each named
            as it runs: on stderr, or a widget in Jupyter. Default False (``grade-kit
            score`` shows it unless ``--quiet``).
        prices: A price file (YAML or JSON, Inspect's ``--model-cost-config`` shape: per
            model ``input``, ``output``, ``input_cache_write``, ``input_cache_read`` in $ per
            million tokens) or the same mapping, for the runs whose source logged no cost;
            default None (a cost the log carries is used as logged; no other is computed).
            A model it does not price is named, never priced at 0 (docs/methodology.md §4
            "Cost"); its SHA-256 is in the provenance.

    Returns:
        The :class:`Evaluation`.

    Example:
        >>> import grade_kit as gk
        >>> ev = gk.evaluate("fixtures/tasks", "fixtures/runs", judge="rules")
        >>> ev.leaderboard.select("setup", "composite")  # doctest: +SKIP
    """
    if frames not in ("polars", "pandas"):
        raise ValueError(f"frames must be 'polars' or 'pandas', not {frames!r}")
    resolve_grader(grader)
    if cluster not in CLUSTERS:
        raise ValueError(f"cluster must be one of {', '.join(CLUSTERS)}, not {cluster!r}")
    priced = None if prices is None else read_prices(prices)
    if arguments is None and is_store(tasks):  # what the provenance records of this call
        arguments = {"store": str(Path(cast(Path | str, tasks))), "grader": grader,
                     "repeats": repeats, "frames": frames, "seed": seed,
                     "exclude_channel_overhead": exclude_channel_overhead, "cluster": cluster}
    elif arguments is None:
        arguments = {
            "judge": None if judge is None else resolve_judge(judge).name,
            "grader": grader if grader is None or isinstance(grader, str) else grader.name,
            "claim_judge": None if claim_judge is None else claim_judge.name,
            "repeats": repeats, "packs": None if packs is None else str(packs),
            "frames": frames, "seed": seed,
            "exclude_channel_overhead": exclude_channel_overhead, "cluster": cluster}
    if is_store(runs):
        raise ValueError("a packed store holds its tasks: pass it alone, gk.evaluate(store)")
    if is_store(tasks):
        if runs is not None or judgements is not None or grades is not None:
            raise ValueError("a packed store holds its runs, judgements and grades: pass it "
                             "alone, gk.evaluate(store)")
        if judge is not None or claim_judge is not None or not (
                grader is None or grader == "rules"):
            raise ValueError(
                "a packed store is scored from the judgements and grades packed into it (and "
                "grader='rules'): judge or grade the runs first (grade-kit judge / grade), "
                "then pack their output with the runs")
        with gc_paused(), stage_progress(STORE_STAGES, progress) as step:
            return evaluate_store(Path(cast(Path | str, tasks)), grader, repeats, frames,
                                   seed, arguments, exclude_channel_overhead, map_partitions,
                                   step, cluster=cluster, prices=priced)
    size = _run_bytes(runs)
    if size > STORE_ABOVE_BYTES and judge is None and claim_judge is None and (
            grader is None or grader == "rules"):
        return evaluate_through_store(
            cast(Records, tasks), cast(Records, runs), size, judgements, grades, packs,
            grader, repeats, frames, seed, exclude_channel_overhead, map_partitions, progress,
            arguments, cluster=cluster, prices=priced)
    with gc_paused():  # the pipeline builds many small objects; see grade_kit._gc
        return _evaluate(tasks, runs, judgements, grades, judge, grader, claim_judge, repeats,
                         packs, frames, seed, arguments, exclude_channel_overhead,
                         map_partitions, progress, cluster, priced)


STORE_ABOVE_BYTES = 512 * 1024**2
"""Run files larger than this in total (about 290,000 rich runs) are scored through a
temporary packed store, one partition at a time, which bounds memory (docs/scaling.md
"The memory bound"); the results are the same."""


def _run_bytes(runs: Records | None) -> int:
    """The total size of the run files given, 0 for in-memory records or none."""
    if runs is None or isinstance(runs, Inputs) or is_in_memory(runs):
        return 0
    try:
        files = run_files(cast(Path | str, runs))
    except InputError:
        return 0  # the reader says what is wrong, in its words
    return sum(path.stat().st_size for path in files if path.is_file())


def _evaluate(tasks: Records | Inputs, runs: Records | None, judgements: Records | None,
              grades: Records | None, judge: str | Judge | None,
              grader: str | Grader | None,
              claim_judge: ClaimJudge | None, repeats: int | None,
              packs: Path | str | None, frames: FrameKind, seed: int,
              arguments: dict[str, Any],
              exclude_channel_overhead: bool = False,
              map_partitions: MapPartitions | None = None,
              progress: bool = False, cluster: Cluster = "question",
              prices: Prices | None = None) -> Evaluation:
    # Each optional stage is decided once, here: for the bar's count and for the work.
    model_grader = None if grader is None or isinstance(grader, str) else grader
    rules = grader == "rules"
    stages = ["read", *(["judge"] if judge is not None else []),
              *(["grade"] if model_grader is not None else []),
              "flatten", "GRADE scores", *(["rule grades"] if rules else []),
              "standard statistics", "results"]
    with stage_progress(stages, progress) as step:
        step("read")
        inputs = _inputs(tasks, runs, judgements, grades, packs)
        judges_used: list[str] = []
        if judge is not None:
            step("judge")
            chosen = resolve_judge(judge)
            inputs = replace(inputs, judgements=concat_records(
                Judgement, inputs.judgements, new_judgements(chosen, inputs)))
            judges_used.append(chosen.name)
        graders_used: list[str] = []
        if model_grader is not None:
            step("grade")
            inputs = replace(inputs, grades=concat_records(
                Grade, inputs.grades, new_grades(model_grader, inputs)))
            graders_used.append(model_grader.name)
        step("flatten")
        data = EvalData.from_records(inputs.tasks, inputs.runs, inputs.judgements, inputs.grades,
                                     inputs.run_lines)
        # Flattened: the records are read again only when asked for (explain, the explorer)
        # and written to the state as the same records files, so they are held as those
        # (an Inputs value given stays the caller's, whole).
        if not isinstance(tasks, Inputs):
            inputs = inputs.held()
        step("GRADE scores")
        if map_partitions is None:
            scores = grade_scores(data, claim_judge)
        else:  # the same map and reduce as a store's, over parts split by task in memory
            scores = combine_scores(
                list(map_partitions(partial(partition_scores, claim_judge=claim_judge),
                                    split_by_task(data))), data.tasks, data.weights)
        recorded_graders = set(data.grades.get_column("grader").unique().to_list())
        graders = [*graders_used, *sorted(recorded_graders - set(graders_used))]
        if rules:
            step("rule grades")
            rule_records = rule_grade_records(data, scores.runs, scores.matches)
            data = replace(data, grades=pl.concat([data.grades, rule_records], how="vertical"))
            graders.append(RULE_GRADER)
        recorded_judges = sorted(set(data.judgements.get_column("judge").unique().to_list())
                                 - set(judges_used))
        return conclude(
            inputs, data, scores, frames, repeats, seed, exclude_channel_overhead, step,
            cluster=cluster, prices=prices, arguments=dict(arguments),
            judges=[*judges_used, *recorded_judges]
            + ([f"claim_judge:{claim_judge.name}"] if claim_judge is not None else []),
            graders=graders)
