"""The ``grade-kit`` command (docs/methodology.md §5)."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import gc
import io
import math
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any, NoReturn, cast

from grade_kit.adapters.common import ADAPTERS, SETUP_BY, SetupBy
from grade_kit.judges import JUDGES, new_grades, new_judgements
from grade_kit.pipeline.diff import GATED_METRICS
from grade_kit.pipeline.evaluation import evaluate
from grade_kit.pipeline.scored import Evaluation
from grade_kit.reading.inputs import read_inputs
from grade_kit.reading.packed import DEFAULT_CHUNK_LINES, DEFAULT_PARTITIONS, is_store, pack
from grade_kit.reading.sniff import log_files, lone_path_error
from grade_kit.reading.task_files import find_packs_dir, load_tasks
from grade_kit.schema import MAX_REPEAT, InputError
from grade_kit.text import visible

DEFAULT_FIXTURES = Path("fixtures")
"""Relative to the working directory: a checkout's fixtures when run from its root."""


def _print_rejects(messages: Sequence[str], limit: int = 20) -> None:
    for message in messages[:limit]:
        print(f"rejected: {message}", file=sys.stderr)
    if len(messages) > limit:
        print(f"rejected: ... and {len(messages) - limit} more (see rejects.jsonl)",
              file=sys.stderr)


def _no_runs(runs: int | None, given: object, evaluation: Evaluation | None = None) -> None:
    """Refuse an evaluation with no run at all: one line (why: every run rejected, with the
    first reject), never an empty page or a notebook cell's traceback."""
    if runs:
        return
    rejected = [] if evaluation is None else evaluation.inputs.rejected
    why = (f"all {len(rejected):,} run records were rejected (first: {rejected[0].message()})"
           if rejected else "no run record was read")
    raise InputError(f"{given}: nothing to evaluate: {why}")


def _report(evaluation: Evaluation, paths: dict[str, Path], what: str) -> None:
    for warning in evaluation.results.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    _print_rejects([r.message() for r in evaluation.inputs.rejected])
    print(f"{what} {len(evaluation.inputs.runs)} runs of {len(evaluation.inputs.tasks)} tasks "
          f"({len(evaluation.inputs.rejected)} rejected) -> {paths['results'].parent}")
    for name, path in paths.items():
        print(f"  {name:<10} {path}")


def _bar(args: argparse.Namespace) -> bool:
    """Whether to show a progress bar: for a person at a terminal only (never with
    ``--quiet``, never into a log file or a pipe, where its redraws would interleave)."""
    return not args.quiet and sys.stderr.isatty()


def _sources(args: argparse.Namespace) -> tuple[Path | list[Path], list[Path] | None]:
    """What to evaluate: (TASKS, RUNS); (TASKS, None) for a packed store (which must come
    alone); (every path, None) when the paths are other tools' logs of one registered kind
    (Inspect ``.eval`` or ``.json`` logs, tau-bench or tau2-bench files, ..., or folders of
    them), read directly."""
    if is_store(args.tasks):
        if args.runs:
            raise InputError(f"{args.tasks}: a packed store holds its runs; give no RUNS")
        return args.tasks, None
    given = [args.tasks, *args.runs]
    try:  # TASKS a log: every path must be one (checked by log_files)
        logs = log_files(args.tasks) and log_files(given)
    except ValueError as exc:
        raise InputError(str(exc)) from exc
    if logs:
        return given, None
    if not args.runs:
        raise InputError(lone_path_error(args.tasks))
    return args.tasks, list(args.runs)


def _pack(args: argparse.Namespace) -> int:
    report = pack(args.tasks, list(args.runs), args.out, judgements=args.judgements,
                  grades=args.grades, packs=args.packs, partitions=args.partitions,
                  chunk_lines=args.chunk_lines, progress=not args.quiet)
    print(f"packed {report}")
    return 0


def _score(args: argparse.Namespace) -> int:
    from grade_kit.pipeline.files import output_folder

    # checked before the evaluation (never minutes of work for nothing), made only when the
    # evaluation is written (a command that fails leaves no folder behind)
    output_folder(args.out, create=False)
    tasks, runs = _sources(args)
    pool = (ProcessPoolExecutor(args.workers, mp_context=get_context("spawn"))
            if args.workers > 1 else None)
    try:
        evaluation = evaluate(
            tasks, runs, judgements=args.judgements, grades=args.grades,
            judge=args.judge, grader=args.grader, repeats=args.repeats, packs=args.packs,
            cluster=args.cluster, prices=args.prices,
            arguments={k: (str(v) if isinstance(v, Path) else
                           [str(x) for x in v] if isinstance(v, list) else v)
                       for k, v in vars(args).items() if k not in ("func", "quiet")},
            map_partitions=None if pool is None else pool.map, progress=_bar(args))
    finally:
        if pool is not None:
            pool.shutdown()
    _no_runs(len(evaluation.inputs.runs), args.tasks if runs is None else runs[0], evaluation)
    if not args.quiet:
        print(f"writing {args.out} ...", file=sys.stderr)
    _report(evaluation, evaluation.write(args.out), "scored")
    if args.strict and evaluation.inputs.rejected:
        print(f"--strict: {len(evaluation.inputs.rejected)} input records rejected",
              file=sys.stderr)
        return 1
    return 0


def _model_inputs(args: argparse.Namespace) -> Any:
    inputs = read_inputs(args.tasks, args.runs, judgements=getattr(args, "judgements", None),
                         grades=getattr(args, "grades", None), packs=args.packs)
    for warning in inputs.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    _print_rejects([r.message() for r in inputs.rejected])
    return inputs


def _cache(args: argparse.Namespace) -> Path:
    if not args.model:
        raise InputError("--endpoint needs --model (the model's name at that endpoint)")
    cache: Path = args.cache or args.out.with_name(args.out.name + ".cache.jsonl")
    return cache


def _judge(args: argparse.Namespace) -> int:
    from grade_kit.atomic import write_records
    from grade_kit.judges.llm import LLMJudge

    inputs = _model_inputs(args)
    judge: Any = JUDGES["rules"] if args.rules else LLMJudge(
        args.endpoint, args.model, api_key_env=args.api_key_env, cache=_cache(args),
        concurrency=args.concurrency, seed=args.seed, progress=_bar(args))
    out = new_judgements(judge, inputs)
    write_records(args.out, out)
    unusable = sum(1 for j in out if j.score is None)
    print(f"judged {len({j.run_id for j in out})} runs with {judge.name}: {len(out)} "
          f"judgements ({unusable} null, each with its reason) -> {args.out}")
    return 0


def _grade(args: argparse.Namespace) -> int:
    from grade_kit.atomic import atomic_write_text, write_records
    from grade_kit.judges.calibration_review import calibration_review
    from grade_kit.judges.llm_grader import LLMGrader
    from grade_kit.judges.rule_grader import RuleGrader

    inputs = _model_inputs(args)
    grader: Any = RuleGrader() if args.rules else LLMGrader(
        args.endpoint, args.model, api_key_env=args.api_key_env, cache=_cache(args),
        concurrency=args.concurrency, seed=args.seed, progress=_bar(args))
    out = new_grades(grader, inputs)
    write_records(args.out, out)
    pending = sum(1 for g in out if "pending" in (g.core_conclusion, g.request_fulfilment))
    print(f"graded {len(out)} runs with {grader.name} ({pending} pending) -> {args.out}")
    if args.calibration:
        review = calibration_review(inputs.tasks, inputs.runs, grader=grader, seed=args.seed)
        args.calibration.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.calibration, review.markdown())
        figure = "—" if review.consistency is None else f"{review.consistency:.3f}"
        print(f"{review.label}: {review.samples} calibration samples, consistency {figure} "
              f"-> {args.calibration}")
    return 0


def _validate(args: argparse.Namespace) -> int:
    loaded = load_tasks(args.tasks, args.packs)
    for warning in loaded.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    _print_rejects([r.message() for r in loaded.rejected], limit=1000)
    plain = sum(1 for t in loaded.records if t.kind == "plain")
    print(f"{len(loaded.records)} tasks valid ({plain} plain), {len(loaded.rejected)} rejected")
    return 1 if loaded.rejected else 0


def _export(args: argparse.Namespace) -> int:
    from grade_kit.presentation.report import export_notebook

    if args.out is not None and args.out.resolve() == args.notebook.resolve():
        raise InputError(f"{args.out}: is the notebook itself; name another --out")
    written = export_notebook(args.notebook, args.out, code=not args.no_code)
    print(f"export: {written} (offline; charts interactive)")
    return 0


def _fixtures(args: argparse.Namespace) -> int:
    from grade_kit.demo import generate_packs, record_runs, write_task_suite

    packs = generate_packs(args.out)
    print(f"fixtures: {len(packs)} packs (seed 42) -> {args.out}")
    if args.tasks:
        tasks = write_task_suite(args.out, args.tasks)
        print(f"fixtures: {len(tasks)} task files -> {args.tasks}")
    if args.runs:
        if not args.tasks:
            raise InputError("--runs needs --tasks (runs answer the generated tasks)")
        loaded = load_tasks(args.tasks, args.out)
        runs = record_runs(loaded.records, args.out, args.runs)
        print(f"fixtures: recorded runs of {len(runs)} setups -> {args.runs}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from grade_kit.demo import build_fixtures, demo_fixtures

    if args.fixtures is None:
        root = demo_fixtures()  # the checkout's, or built once into the cache folder
    else:
        root = Path(args.fixtures)
        if not (root / "tasks").is_dir() or not (root / "runs").is_dir():
            print(f"demo: no fixtures at {root}; generating them (seed 42)")
            build_fixtures(root)
    out = Path(args.out)
    if args.recorded:
        runs: Path | list[Path] = root / "runs"
        how = "recorded runs"
        verdict_args: dict[str, Any] = {"judge": "rules", "grader": "rules"}
        by = "judged by the rule judge and graded by the rule grader"
    else:
        from grade_kit.demo.server import JUDGE_MODEL, fetch_demo_runs
        from grade_kit.demo.verdicts import DemoVerdicts, model_verdicts

        print(f"demo: serving the simulated setups on 127.0.0.1 (latencies x "
              f"{args.latency_scale:g}) and fetching every task x 5 repeats through them")
        holder: dict[str, DemoVerdicts] = {}
        stores = [out / "runs" / f"{s}.jsonl" for s in ("careful", "hasty", "erratic")]

        def verdicts_over_http(url: str) -> None:  # while the server still runs
            print("demo: judging and grading through the demo judge model over HTTP")
            inputs = read_inputs(root / "tasks", stores, packs=root / "packs")
            holder["v"] = model_verdicts(url, JUDGE_MODEL, inputs.tasks, inputs.runs,
                                         out / "verdicts", progress=sys.stderr.isatty())

        runs = fetch_demo_runs(root, out / "runs", latency_scale=args.latency_scale,
                               then=verdicts_over_http, progress=sys.stderr.isatty())
        v = holder["v"]
        how = "runs fetched over HTTP"
        verdict_args = {"judgements": v.judgements, "grades": v.grades}
        figure = "—" if v.review.consistency is None else f"{v.review.consistency:.3f}"
        by = (f"judged ({v.judge}) and graded ({v.grader}) by the demo judge model over HTTP; "
              f"pairwise: {v.flagged} of {v.pairs} pairs flagged as position-dependent; "
              f"{v.review.label}: consistency {figure} over {v.review.samples} calibration "
              f"samples ({v.calibration})")
    prices = root / "prices.yaml"  # the demo models' made-up prices, where the suite has them
    evaluation = evaluate(root / "tasks", runs, packs=root / "packs", **verdict_args,
                          prices=prices if prices.is_file() else None,
                          arguments={"command": "demo", "fixtures": str(root),
                                     "recorded": args.recorded})
    paths = evaluation.write(args.out)
    index = None
    if not args.no_report:
        from grade_kit.presentation.report import NOTEBOOK_DIR, build_report

        if NOTEBOOK_DIR.is_dir():
            print("demo: running the notebooks into offline HTML scorecards")
            # every notebook reopens the one evaluation just written, never scores again
            index = build_report(
                {"scored": str(Path(args.out).resolve())}, out / "html",
                title="grade_kit demo: three simulated setups, 40 tasks, 5 repeats")
    _print_rejects([r.message() for r in evaluation.inputs.rejected])
    print(f"demo: scored {len(evaluation.inputs.runs)} {how} of "
          f"{len(evaluation.inputs.tasks)} tasks, {by}")
    print(evaluation)
    print(f"demo: scorecard at {paths['scorecard']}")
    if index is not None:
        print(f"demo: every page: {index.resolve()}")
        print(f"demo: the report to mail: {(index.parent / 'report.html').resolve()}")
    return 0


def _setup_by(value: str) -> SetupBy:
    """``--setup-by``: one of the named ways, or a JSON file mapping file names to setups."""
    if value in SETUP_BY:
        return cast(SetupBy, value)
    path = Path(value)
    if not path.is_file():
        raise InputError(f"--setup-by {value}: neither {', '.join(SETUP_BY)} nor a mapping "
                         "file (no such file)")
    from grade_kit.reading.parse import ParseError, loads_json

    try:
        mapping = loads_json(path.read_text(encoding="utf-8"))
    except (ParseError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not JSON: {exc}") from exc
    if not isinstance(mapping, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                and v for k, v in mapping.items()):
        raise InputError(f"{path}: --setup-by mapping must be a JSON object of log file name "
                         "-> setup name (non-empty text)")
    return mapping


def _mapping(given: list[str] | None, option: str, meaning: str) -> dict[str, str] | None:
    """A repeatable ``option KEY=VALUE`` as a mapping (None when not given)."""
    out: dict[str, str] = {}
    for item in given or []:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise InputError(f"{option} {item}: expected {meaning}")
        out[key] = value
    return out or None


def _datasets(given: list[str] | None) -> dict[str, str] | None:
    """``--dataset TASK=NAME`` (repeatable) as a mapping from a log's task or file name to
    the dataset its samples belong to."""
    return _mapping(given, "--dataset", "TASK=DATASET (a log's task or file name, then the "
                                        "dataset its sample ids belong to)")


def _diff(args: argparse.Namespace) -> int:
    """``grade-kit diff``: the headline and what one side lacks, then the page and frames
    under ``--out``, then the gate (exit 1 on a regression past the margin)."""
    from grade_kit.atomic import folder_lock, replaced_folder
    from grade_kit.pipeline.diff import diff
    from grade_kit.pipeline.files import output_folder
    from grade_kit.presentation.report import build_page

    out = None if args.out is None else output_folder(args.out, create=False).resolve()
    match = _mapping(args.match, "--match", "OLD=NEW (a baseline setup, then the candidate "
                                            "setup it is compared with)")
    d = diff(args.baseline, args.candidate, match=match, cluster=args.cluster)
    print(f"diff: {d.baseline_label} -> {d.candidate_label}: {d.headline}")
    for note in d.notes:
        print(f"note: {note}")
    if out is not None:
        with folder_lock(out), replaced_folder(out) as stage:
            for name in ("summary", "flips", "questions", "setups"):
                getattr(d, f"{name}_frame").write_parquet(stage / f"{name}.parquet")
            build_page("diff", {"baseline": str(Path(args.baseline).resolve()),
                                "candidate": str(Path(args.candidate).resolve()),
                                "match": match, "cluster": args.cluster},
                       stage / "diff.html", f"grade_kit diff: {d.baseline_label} -> "
                                            f"{d.candidate_label}")
        print(f"diff: the page {out / 'diff.html'}; the frames {out}/*.parquet")
    failed = False
    if args.fail_on_regression is not None:
        found = d.regressions(args.fail_on_regression, args.metric, args.alpha)
        for line in found:
            print(line)
        if not found:
            print(f"gate: no matched setup's {args.metric} fell by more than "
                  f"{args.fail_on_regression:g} with Holm p < {args.alpha:g}")
        failed = bool(found)
    if args.fail_on_cost_increase is not None:
        dearer = d.cost_increases(args.fail_on_cost_increase)
        for line in dearer:
            print(line)
        if not dearer:
            print(f"gate: no matched setup's cost per run rose more than "
                  f"x{args.fail_on_cost_increase:g} with its interval above 0")
        failed = failed or bool(dearer)
    return 1 if failed else 0


def _import(args: argparse.Namespace) -> int:
    from grade_kit.adapters import import_logs, write_imported

    merged = import_logs(args.source, args.paths, setup=args.setup, scorer=args.scorer,
                         datasets=_datasets(args.dataset), setup_by=_setup_by(args.setup_by))
    stated = set(merged.stated_repeats.values())
    if len(stated) == 1:
        merged.notes.append(f"R = {min(stated)} repeats per question, as the logs state it "
                            f"({'; '.join(sorted(merged.stated_repeats))}): pass --repeats "
                            f"{min(stated)} to grade-kit score so the plan is stated, not "
                            "inferred")
    written = write_imported(merged, args.out)
    print(f"imported {len(merged.tasks)} tasks, {len(merged.runs)} runs, "
          f"{len(merged.grades)} grades -> {args.out}")
    for note in dict.fromkeys(merged.notes):
        print(f"  note: {note}")
    for name, path in written.items():
        print(f"  {name:<7} {path}")
    return 0


EVALUATION_PARAMETERS = ("judgements", "grades", "judge", "grader", "repeats", "packs",
                         "cluster", "prices")
"""The notebook parameters that change the evaluation itself (``-p`` may set them too)."""


OPEN_FILES = 4096
"""The soft limit of open files ``grade-kit report`` raises itself to (within the hard
limit): its kernels and their sockets need more than a low default (macOS: 256) allows."""


def _raise_open_files() -> None:
    """Raise this process's soft open-files limit to :data:`OPEN_FILES` where the hard
    limit allows (the kernels it starts inherit it)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = OPEN_FILES if hard == resource.RLIM_INFINITY else min(OPEN_FILES, hard)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def _score_into(folder: Path, args: argparse.Namespace,
                overrides: dict[str, Any]) -> str:
    """``grade-kit report``'s evaluation of its inputs, written to ``folder``; returns the
    report's default title (:attr:`Evaluation.title`). The evaluation is not returned: the
    notebooks' kernels reopen it from ``folder``."""
    tasks, runs = _sources(args)
    options = {name: getattr(args, name) for name in EVALUATION_PARAMETERS}
    options.update({k: v for k, v in overrides.items() if k in EVALUATION_PARAMETERS})
    evaluation = evaluate(tasks, runs, progress=sys.stderr.isatty(), **options)
    _no_runs(len(evaluation.inputs.runs),
             runs[0] if isinstance(runs, list) and runs else tasks, evaluation)
    _print_rejects([r.message() for r in evaluation.inputs.rejected])  # said, not only paged
    evaluation.write(folder)
    return evaluation.title


def _report_cmd(args: argparse.Namespace) -> int:
    """Evaluate once (or reopen a scored folder), then run every notebook on that one
    evaluation (``scored``); the scored folder is kept beside the pages (``scored/``)."""
    import yaml

    from grade_kit.atomic import folder_lock, replaced_folder
    from grade_kit.pipeline.files import output_folder, refuse_links
    from grade_kit.pipeline.state import STATE_DIR, scored_title, verify_state
    from grade_kit.presentation.report import (
        ReportKernels,
        build_report,
        report_entries,
    )

    _raise_open_files()
    overrides = {name: yaml.safe_load(value)  # -p weakest 3, -p judge null
                 for name, value in args.parameter or []}
    out = output_folder(args.out, create=False)
    given = Path(args.tasks)
    # the notebooks' kernels boot and import while the inputs are scored
    is_scored = (given / STATE_DIR / "state.json").is_file()
    if is_scored:  # checked whole before any kernel starts (docs/methodology.md §6)
        if args.runs:
            raise InputError(f"{given}: a scored folder holds its evaluation; give no RUNS")
        state = verify_state(given)
        if state.store is None:  # a store's runs are in its copy: counted when it was scored
            _no_runs(state.counts.get("runs"), given)
    refuse_links(out, ["scored", *report_entries()])
    out = out.resolve()
    # the pages and the scored folder they show, built whole beside the folder and swapped in
    # (an interrupt or a failing notebook leaves the folder as it was)
    with ReportKernels() as kernels, folder_lock(out), replaced_folder(out) as stage:
        if is_scored:
            scored, title = given.resolve(), scored_title(given, state)
        else:
            scored = stage / "scored"  # under its final name: the pages name it
            title = _score_into(scored, args, overrides)
            # the evaluation is gone with the call: its memory is free for the kernels
            gc.collect()  # (a kernel's reopen took 3 s beside it, 0.9 s without)
        parameters: dict[str, object] = {"scored": str(scored), **{
            k: v for k, v in overrides.items() if k not in EVALUATION_PARAMETERS}}
        built = build_report(parameters, stage, title=args.title or title, kernels=kernels)
    index = out / built.relative_to(stage)
    print(f"report: {index.parent / 'report.html'} (one page to mail); each page: {index}")
    return 0


def _fetch(args: argparse.Namespace) -> int:
    from grade_kit.fetching import HTTPAgent, OpenAIChat, fetch

    if args.agent is None and (args.endpoint is None or args.model is None):
        raise InputError("fetch needs --endpoint and --model (an OpenAI-compatible "
                         "endpoint), or --agent URL (an HTTP agent streaming events)")
    if args.agent is not None and args.setup is None:
        raise InputError("--agent needs --setup (the name written on the runs)")
    loaded = load_tasks(args.tasks, args.packs)
    _print_rejects([r.message() for r in loaded.rejected])
    if not loaded.records:
        raise InputError(f"{args.tasks}: no task loaded")
    packs = args.packs or find_packs_dir(args.tasks)
    responder: Any = (HTTPAgent(args.agent, api_key_env=args.api_key_env)
                      if args.agent is not None else
                      OpenAIChat(args.endpoint, args.model, api_key_env=args.api_key_env,
                                 packs=packs if args.tools else None))
    report = fetch(loaded.records, responder, args.out, setup=args.setup or args.model,
                   repeats=args.repeats, concurrency=args.concurrency,
                   timeout_s=args.timeout, rate_per_second=args.rate,
                   rerun_failed=args.rerun_failed, progress=_bar(args))
    for torn in report.torn:
        print(f"warning: {args.out}: a torn last line was set aside in "
              f"{args.out}.torn and its slot fetched again: {torn[:120]!r}", file=sys.stderr)
    print(f"fetch: {report} -> {args.out}")
    return 0


def _demo_server(args: argparse.Namespace) -> int:
    from grade_kit.demo import demo_fixtures
    from grade_kit.demo.server import DemoServer

    root = Path(args.fixtures) if args.fixtures is not None else demo_fixtures()
    if not (root / "tasks").is_dir():
        raise InputError(f"{root}: no fixtures (run `grade-kit demo fixtures --out {root}/packs "
                         f"--tasks {root}/tasks`, or leave --fixtures out for the demo's)")
    tasks = load_tasks(root / "tasks", root / "packs").records
    server = DemoServer(tasks, root / "packs", port=args.port,
                        latency_scale=args.latency_scale, fixed_latency_s=args.fixed_latency,
                        faults=args.faults, warm_repeats=args.warm_repeats).start()
    print(f"demo-server: {server.url} (models: careful, hasty, erratic, judge; agents at "
          f"{server.url.removesuffix('/v1')}/agent/<setup>; agree on a timeout of "
          f"{server.timeout_s:g} s); Ctrl-C stops it", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


def _review_sheet(args: argparse.Namespace) -> int:
    from grade_kit.review import write_review_sheet
    from grade_kit.standard.blind import ANONYMITY_NOTE

    evaluation = evaluate(*_sources(args), judgements=args.judgements,
                          grades=args.grades, judge=args.judge, grader=args.grader,
                          repeats=args.repeats, packs=args.packs, cluster=args.cluster,
                          prices=args.prices)
    _print_rejects([r.message() for r in evaluation.inputs.rejected])
    queue, key = write_review_sheet(evaluation, args.out, key=args.key,
                                    spot_check=args.spot_check, seed=args.seed)
    counts = dict(queue.group_by("reason").len().iter_rows())
    print(f"review sheet: {queue.height} answers to review -> {args.out} ("
          + ", ".join(f"{n} {why}" for why, n in sorted(counts.items())) + ")")
    print(f"key (keep it from the reviewers): {key}")
    print(f"note: {ANONYMITY_NOTE}")
    return 0


def _grading_sheet(args: argparse.Namespace) -> int:
    from grade_kit.standard.blind import ANONYMITY_NOTE, grading_sheet, write_grading_sheet

    evaluation = read_inputs(args.tasks, args.runs, packs=args.packs)
    _print_rejects([r.message() for r in evaluation.rejected])
    runs = [r for r in evaluation.runs if r.attempt_of is None or args.include_reruns]
    if args.setups:
        wanted = set(args.setups.split(","))
        unknown = wanted - {r.setup for r in runs}
        if unknown:
            raise InputError(f"--setups names setups with no runs: {sorted(unknown)}")
        runs = [r for r in runs if r.setup in wanted]
    rows, key = grading_sheet(evaluation.tasks, runs, seed=args.seed,
                              calibration_pairs=args.calibration_pairs)
    key_path = args.key or args.out.with_suffix(".key.json")
    write_grading_sheet(rows, key, args.out, key_path)
    print(f"grading sheet: {len(rows)} answers ({len(key['pairs'])} calibration pairs), "
          f"seed {args.seed} -> {args.out}")
    print(f"key (keep it from the graders): {key_path}")
    print(f"note: {ANONYMITY_NOTE}")
    return 0


def _import_grades(args: argparse.Namespace) -> int:
    from grade_kit.atomic import atomic_write_text, write_records
    from grade_kit.standard.blind import (
        calibration_report,
        default_key_path,
        import_grading_sheet,
        read_key,
    )

    key_path = args.key or default_key_path(args.sheet)
    if not key_path.is_file():
        raise InputError(f"{key_path}: no such key file (pass --key)")
    key = read_key(key_path)
    result = import_grading_sheet(args.sheet, key)
    if result.errors:
        for error in result.errors:
            print(f"error: {error}", file=sys.stderr)
        print(f"nothing imported: fix the {len(result.errors)} row(s) above and run again",
              file=sys.stderr)
        return 1
    write_records(args.out, result.grades)
    print(f"imported {len(result.grades)} grades -> {args.out}")
    if result.blank:
        print(f"{len(result.blank)} answers left blank stay ungraded (pending_verification): "
              f"{', '.join(result.blank[:10])}{' ...' if len(result.blank) > 10 else ''}")
    if result.calibration:
        report = calibration_report(result.calibration, args.model_grader or ())
        report_path = args.report or args.out.with_name("calibration.md")
        atomic_write_text(report_path, report)
        print(f"{report.splitlines()[0].lstrip('# ')}: {report_path}")
    return 0


def _level(text: str) -> float:
    """An argparse type: a level strictly between 0 and 1, or a usage error."""
    value = _non_negative(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, not {text!r}")
    return value


def _at_least_one(text: str) -> float:
    """An argparse type: a finite ratio of at least 1 (1.1: 10% more), or a usage error."""
    value = _non_negative(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a ratio of at least 1, not {text!r}")
    return value


def _bounded(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an integer in [low, high], or a clear usage error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from exc
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low:,} and {high:,}")
        return value

    return parse


def _finite(*, zero_allowed: bool) -> Callable[[str], float]:
    """An argparse type: a finite number above 0 (or at least 0 when ``zero_allowed``), or a
    clear usage error."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from exc
        if not math.isfinite(value) or value < 0 or (value == 0 and not zero_allowed):
            bound = "at least 0" if zero_allowed else "above 0"
            raise argparse.ArgumentTypeError(f"must be a finite number {bound}, not {text!r}")
        return value

    return parse


_positive_seconds = _finite(zero_allowed=False)
_non_negative = _finite(zero_allowed=True)


@dataclass(frozen=True)
class Argument:
    """One ``add_argument`` call: its names and options; ``exclusive`` names the required
    mutually exclusive group it belongs to (one of the group must be given)."""

    names: tuple[str, ...]
    options: dict[str, Any] = field(default_factory=dict)
    exclusive: str | None = None


def _arg(*names: str, exclusive: str | None = None, **options: Any) -> Argument:
    return Argument(names, options, exclusive)


@dataclass(frozen=True)
class Command:
    """A ``grade-kit`` command: its name, one-line help, what runs it, its arguments and its
    own subcommands (``demo serve``)."""

    name: str
    help: str
    run: Callable[[argparse.Namespace], int]
    arguments: tuple[Argument, ...] = ()
    commands: tuple[Command, ...] = ()


def _inputs(*, store: bool) -> tuple[Argument, ...]:
    """TASKS, RUNS, --judgements, --grades and --packs; with ``store``, TASKS may be a packed
    store or other tools' logs and RUNS is then left out."""
    return (
        _arg("tasks", type=Path, help=(
            "folder of task files, a tasks JSONL file, a packed store (grade-kit pack; then "
            "give no RUNS), or other tools' logs (Inspect .eval/.json, tau-bench, tau2-bench "
            "files or folders of them: every path a log, no RUNS needed)" if store
            else "folder of task files, or a tasks JSONL file")),
        _arg("runs", type=Path, nargs="*" if store else "+",
             help="run records (JSONL, one attempt per line), or folders of them"),
        _arg("--judgements", type=Path, help="recorded judgements (JSONL)"),
        _arg("--grades", type=Path, help="grade records (JSONL)"),
        _arg("--packs", type=Path,
             help="folder of packs for ground_truth keys (default: next to TASKS)"),
    )


EVALUATION = (
    *_inputs(store=True),
    _arg("--judge", choices=sorted(JUDGES), help="judge the judged dimensions where no "
         "judgement is recorded (rules: the offline rule judge)"),
    _arg("--grader", choices=["rules"], help="grade every delivered GRADE run that has no "
         "grade record (rules: the offline rule grader)"),
    _arg("--repeats", type=_bounded(1, MAX_REPEAT), default=None,
         help="planned repeats per task (default: inferred, the largest repeat more than 5%% "
              "of (setup, task) pairs reach)"),
    _arg("--cluster", choices=["question", "track", "pack"], default="question",
         help="what the repeats are clustered by in every interval and paired test (default: "
              "question; docs/methodology.md)"),
    _arg("--prices", type=Path, metavar="PRICES.yaml",
         help="dollars per million tokens per model (YAML or JSON, Inspect's "
              "--model-cost-config shape: input, output, input_cache_write, input_cache_read) "
              "for runs whose log carries no cost; a model it lacks is named, never priced "
              "at 0 (default: logged costs only)"),
)
"""The inputs and options of :func:`grade_kit.evaluate`, the same for every command that
evaluates (score, report, review-sheet)."""


def _out(help_text: str, **options: Any) -> Argument:
    return _arg("--out", type=Path, help=help_text, **({"required": True} | options))


def _quiet(help_text: str = "no progress bar") -> Argument:
    return _arg("--quiet", action="store_true", help=help_text)


def _model_command(name: str, help_text: str, what: str, rule: str,
                   run: Callable[[argparse.Namespace], int]) -> Command:
    """``judge`` or ``grade``: the rule judge or grader, or a model behind an endpoint."""
    calibration = (_arg("--calibration", type=Path, help="also grade calibration samples (the "
                        "same facts in four forms) and write their consistency review "
                        "(Markdown)"),) if name == "grade" else ()
    return Command(name, help_text, run, (
        _arg("tasks", type=Path, help="folder of task files, or a tasks JSONL file"),
        _arg("runs", type=Path, nargs="+", help="run records (JSONL) or folders"),
        _arg("--packs", type=Path,
             help="folder of packs for ground_truth keys (default: next to TASKS)"),
        _arg(f"--{what}", type=Path,
             help=f"recorded {what} (JSONL): their runs are not asked again"),
        _arg("--rules", action="store_true", help=rule, exclusive="how"),
        _arg("--endpoint", help="OpenAI-compatible base URL of the model", exclusive="how"),
        _arg("--model", help="model name (with --endpoint)"),
        _arg("--api-key-env", help="NAME of the environment variable holding the API key"),
        _arg("--cache", type=Path, help="verdict cache (default: <out>.cache.jsonl)"),
        _arg("--concurrency", type=_bounded(1, 1024), default=8,
             help="requests in flight (default 8)"),
        _arg("--seed", type=int, default=0,
             help="seed of the answers' aliases and calibration picks (default 0)"),
        _quiet(),
        *calibration,
        _out(f"{what} JSONL to write"),
    ))


def commands() -> tuple[Command, ...]:
    """Every ``grade-kit`` command, in the order ``--help`` lists them (made when the parser
    is, so an adapter registered after import is a choice of ``import``)."""
    return (
        Command("score", "score run records against tasks", _score, (
            *EVALUATION,
            _arg("--strict", action="store_true",
                 help="exit non-zero when any input record is rejected"),
            _out("output folder"),
            _arg("--workers", type=_bounded(1, 256), default=1,
                 help="score GRADE's map step in this many processes: a packed store's "
                      "partitions, or the inputs split by task (default 1)"),
            _quiet("no progress bar (by default one on stderr names each stage)"),
        )),
        Command("pack", "validate inputs chunk by chunk into a partitioned Parquet store (for "
                        "inputs bigger than memory)", _pack, (
            *_inputs(store=False),
            _arg("--partitions", type=_bounded(1, 4096), default=DEFAULT_PARTITIONS,
                 help=f"partitions by task (default {DEFAULT_PARTITIONS})"),
            _arg("--chunk-lines", type=_bounded(1, 10**8), default=DEFAULT_CHUNK_LINES,
                 help=f"lines read at a time (default {DEFAULT_CHUNK_LINES:,})"),
            _quiet("no progress lines"),
            _out("the store folder to create (new or empty)"),
        )),
        _model_command("judge", "judge the judged dimensions (rule judge or a model) -> "
                                "judgements JSONL", "judgements", "the offline rule judge", _judge),
        _model_command("grade", "grade delivered runs (rule grader or a model) -> grades JSONL",
                       "grades", "the offline rule grader", _grade),
        Command("export", "an executed notebook as one offline HTML file whose charts keep "
                          "their tooltips", _export, (
            _arg("notebook", type=Path, help="the executed .ipynb (saved from JupyterLab, or "
                                             "papermill's output)"),
            _out("the HTML file (default: the notebook's path with .html)", required=False),
            _arg("--no-code", action="store_true", help="outputs and text only"))),
        Command("validate", "check task files alone", _validate, (
            _arg("tasks", type=Path), _arg("--packs", type=Path))),
        Command("import", "other tools' logs -> tasks/runs/grades JSONL", _import, (
            _arg("source", choices=sorted(ADAPTERS), help="; ".join(
                f"{a.name}: {a.describes} ({', '.join(a.suffixes)})"
                for a in sorted(ADAPTERS.values(), key=lambda a: a.name))),
            _arg("paths", type=Path, nargs="+", help="log files or folders of them"),
            _out("output folder"),
            _arg("--setup", help="setup name (default: the model named in each log)"),
            _arg("--scorer", help="inspect: the score to grade by (default: the first)"),
            _arg("--dataset", action="append", metavar="TASK=DATASET",
                 help="inspect: the dataset a log's sample ids belong to, by the log's task or "
                      "file name (repeatable; default: the log's dataset name, and where it "
                      "names none, the sample ids alone)"),
            _arg("--setup-by", default="auto", metavar="auto|model|file|MAPPING.json",
                 help="how logs group into setups: auto (default: the model, and the "
                      "configuration that differs between its logs over the same questions; "
                      "continuation and retry logs join their setup), model, file (each log its "
                      "own setup), or a JSON object mapping a log's file name to its setup name"),
        )),
        Command("diff", "this evaluation against an earlier one: flips, paired tests, a "
                        "regression gate", _diff, (
            _arg("baseline", type=Path, help="the earlier evaluation: a scored folder "
                                             "(grade-kit score --out DIR) or logs"),
            _arg("candidate", type=Path, help="the later one, the same way"),
            _out("write diff.html and the frames (summary, flips, questions, setups) here",
                 required=False),
            _arg("--match", action="append", metavar="OLD=NEW",
                 help="compare baseline setup OLD with candidate setup NEW (repeatable; "
                      "default: setups of one name)"),
            _arg("--fail-on-regression", type=_non_negative, metavar="MARGIN",
                 help="exit 1 when some matched setup's --metric fell by more than MARGIN "
                      "with Holm p < --alpha (one line each); else exit 0"),
            _arg("--fail-on-cost-increase", type=_at_least_one, metavar="RATIO",
                 help="exit 1 when some matched setup's dollars per run rose more than RATIO "
                      "times (1.1: by more than 10%%) with its 95%% interval above 0"),
            _arg("--metric", default="resolved_rate", choices=GATED_METRICS,
                 help="the gated metric (default resolved_rate)"),
            _arg("--alpha", type=_level, default=0.05,
                 help="the gate's level for the Holm-adjusted p (default 0.05)"),
            _arg("--cluster", choices=["question", "track", "pack"], default="question",
                 help="the unit the paired tests flip (default: question)"),
        )),
        Command("grading-sheet", "export a blind grading sheet (CSV) and key", _grading_sheet, (
            _arg("tasks", type=Path),
            _arg("runs", type=Path, nargs="+"),
            _out("sheet CSV to write"),
            _arg("--key", type=Path, help="key JSON (default: <out>.key.json)"),
            _arg("--setups", help="comma-separated setups (default: all)"),
            _arg("--seed", type=int, default=0, help="alias and order seed (default 0)"),
            _arg("--calibration-pairs", type=_bounded(0, 100_000), default=0,
                 help="answers restated in a second form to check graders (default 0)"),
            _arg("--include-reruns", action="store_true"),
            _arg("--packs", type=Path),
        )),
        Command("review-sheet", "the review queue as a blind grading sheet", _review_sheet, (
            *EVALUATION,
            _arg("--spot-check", type=float, default=0.1,
                 help="share of the other resolved runs sampled (default 0.1)"),
            _arg("--seed", type=int, default=0),
            _arg("--key", type=Path, help="key JSON (default: <out>.key.json)"),
            _out("sheet CSV to write"),
        )),
        Command("import-grades", "map a filled grading sheet back to runs", _import_grades, (
            _arg("sheet", type=Path),
            _arg("--key", type=Path, help="key JSON (default: <sheet>.key.json beside the "
                 "sheet, else the grading panel's, in ~/.local/share/grade_kit/keys)"),
            _out("grades JSONL to write"),
            _arg("--report", type=Path,
                 help="calibration report (default: calibration.md next to --out)"),
            _arg("--model-grader", action="append",
                 help="a grader name that is a model (repeatable); 'model:*' always is"),
        )),
        Command("report", "run the notebooks into offline HTML scorecards", _report_cmd, (
            *EVALUATION,
            _arg("-p", "--parameter", nargs=2, action="append", metavar=("NAME", "VALUE"),
                 help="a notebook parameter (value read as YAML), repeatable"),
            _arg("--title", help="the title of report.html (default: from the inputs' file "
                                 "names)"),
            _out("output folder"),
        )),
        Command("fetch", "fetch answers from an OpenAI-compatible endpoint", _fetch, (
            _arg("tasks", type=Path, help="folder of task files, or a tasks JSONL file"),
            _arg("--endpoint",
                 help="OpenAI-compatible base URL, for example http://127.0.0.1:8000/v1"),
            _arg("--model", help="model name sent to the endpoint"),
            _arg("--agent", help="instead: an HTTP agent endpoint streaming server-sent events "
                                 "(for example http://127.0.0.1:8000/agent/hasty)"),
            _arg("--setup", help="setup name written on the runs (default: the model)"),
            _arg("--repeats", type=_bounded(1, MAX_REPEAT), default=1,
                 help="repeats per task (default 1)"),
            _arg("--concurrency", type=_bounded(1, 1024), default=8,
                 help="attempts in flight (default 8)"),
            _arg("--timeout", type=_positive_seconds, default=600.0,
                 help="seconds before an attempt is stopped (default 600)"),
            _arg("--rate", type=_positive_seconds, default=None,
                 help="request starts per second (default: no limit)"),
            _arg("--api-key-env", help="NAME of the environment variable holding the API key"),
            _arg("--no-tools", dest="tools", action="store_false",
                 help="do not offer the pack's SQL tool"),
            _arg("--rerun-failed", action="store_true",
                 help="re-run failed or timed-out slots as linked attempts"),
            _arg("--packs", type=Path, help="packs folder (default: next to TASKS)"),
            _quiet(),
            _out("runs JSONL (appended to; a second fetch resumes)"),
        )),
        Command("demo", "run the embedded default end to end (or serve or generate its parts)",
                _demo, (
            _out("output folder (default reports/demo)", required=False,
                 default=Path("reports") / "demo"),
            _arg("--fixtures", type=Path, default=None,
                 help="fixtures folder with packs/, tasks/ and runs/ (default: the checkout's "
                      "fixtures/ or, outside a checkout, built once into ~/.cache/grade_kit; a "
                      "folder given without them is generated)"),
            _arg("--recorded", action="store_true",
                 help="score the recorded runs instead of fetching them over HTTP"),
            _arg("--no-report", action="store_true",
                 help="skip the notebooks and HTML scorecards"),
            _arg("--latency-scale", type=_non_negative, default=0.02,
                 help="demo server latencies x this (default 0.02)"),
        ), commands=(
            Command("serve", "serve the demo setups on 127.0.0.1", _demo_server, (
                _arg("--port", type=_bounded(0, 65535), default=8000),
                _arg("--latency-scale", type=_non_negative, default=1.0,
                     help="multiply the recorded latencies (default 1: real figures)"),
                _arg("--fixed-latency", type=_non_negative, default=None,
                     help="every answer takes this many seconds (benchmarks)"),
                _arg("--no-faults", dest="faults", action="store_false",
                     help="answer every slot: no recorded timeouts or failures (the throughput "
                          "benchmark)"),
                _arg("--warm-repeats", type=_bounded(0, 10_000), default=0,
                     help="compute repeats 1..N of every answer before serving (default 0)"),
                _arg("--fixtures", type=Path, default=None,
                     help="fixtures folder (default: the demo's, the checkout's fixtures/ or, "
                          "outside a checkout, built once into ~/.cache/grade_kit)"),
            )),
            Command("fixtures", "generate the fixture packs (seed 42)", _fixtures, (
                _out("packs folder (default fixtures/packs)", required=False,
                     default=DEFAULT_FIXTURES / "packs"),
                _arg("--tasks", type=Path, help="also write the task suite here"),
                _arg("--runs", type=Path,
                     help="also record the simulated setups' runs here (needs --tasks)"),
            )),
        )),
    )


def _add_commands(parser: argparse.ArgumentParser, commands: Sequence[Command], *,
                  dest: str, required: bool) -> None:
    sub = parser.add_subparsers(dest=dest, required=required)
    for command in commands:
        cmd = sub.add_parser(command.name, help=command.help, description=command.help)
        groups: dict[str, Any] = {}
        for argument in command.arguments:
            target: Any = cmd
            if argument.exclusive is not None:
                if argument.exclusive not in groups:
                    groups[argument.exclusive] = cmd.add_mutually_exclusive_group(required=True)
                target = groups[argument.exclusive]
            target.add_argument(*argument.names, **argument.options)
        cmd.set_defaults(func=command.run)
        if command.commands:
            _add_commands(cmd, command.commands, dest=f"{command.name}_command",
                          required=False)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose "unrecognized arguments" error suggests the closest option
    of the command given (``--judgments`` -> did you mean ``--judgements``?)."""

    argv: Sequence[str] = ()

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        self.argv = list(sys.argv[1:] if args is None else args)
        return super().parse_args(self.argv, namespace)

    def _options_of_command(self) -> list[str]:
        """The option strings of the (sub)command ``argv`` names, and its parents'."""
        options: list[str] = []
        parser: argparse.ArgumentParser = self
        for token in self.argv:
            options += [o for a in parser._actions for o in a.option_strings]
            choices = next((a.choices for a in parser._actions
                            if isinstance(a, argparse._SubParsersAction)), None)
            if not isinstance(choices, dict) or token not in choices:
                continue
            parser = choices[token]
        return options + [o for a in parser._actions for o in a.option_strings]

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments:"):
            known = self._options_of_command()
            hints = [close[0] for given in message.split(":", 1)[1].split()
                     if given.startswith("-")
                     and (close := difflib.get_close_matches(given.split("=")[0], known, n=1,
                                                             cutoff=0.7))]
            if hints:
                message += f" (did you mean {', '.join(hints)}?)"
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``grade-kit``, made from :func:`commands`."""
    parser = _Parser(
        prog="grade-kit",
        description="GRADE scores, grades and timing statistics for LLM and agent runs.",
    )
    _add_commands(parser, commands(), dest="command", required=True)
    return parser


@contextlib.contextmanager
def _terminated_as_exit() -> Iterator[None]:
    """SIGTERM (a scheduler's, a notebook runner's or ``timeout``'s stop) raised as
    ``SystemExit(143)`` while a command runs, so that its clean-ups run as on Ctrl-C: a
    temporary store is removed and the process packing it stopped, a demo server stopped.
    (Python's default ends at once, leaving both behind.) Only in the main thread, where a
    handler can be set; the previous handler is put back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class _Visible(io.TextIOBase):
    """A text stream that writes through :func:`~grade_kit.text.visible`: no control or
    bidirectional character of a name, an error or a message reaches the terminal raw (an
    ANSI or OSC sequence, a BEL, a NUL, U+202E); everything else is the wrapped stream's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(visible(text))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    @property
    def encoding(self) -> Any:  # type: ignore[override]
        return self._stream.encoding

    @property
    def errors(self) -> Any:  # type: ignore[override]
        return self._stream.errors

    def isatty(self) -> bool:
        return bool(self._stream.isatty())

    def fileno(self) -> int:
        return int(self._stream.fileno())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def _visible_output() -> Iterator[None]:
    """stdout and stderr written through :class:`_Visible` while a command runs."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Visible(saved[0]), _Visible(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


_INPUTS = ("tasks", "runs", "paths", "judgements", "grades", "packs", "sheet", "key")
"""The arguments that name a command's inputs (``demo``'s ``--tasks`` and ``--runs`` are
outputs: it reads none)."""


def _refuse_out_in_an_input(args: argparse.Namespace) -> None:
    """An ``--out`` equal to or inside an input folder is refused: a later run would read
    these outputs as its inputs (a second ``score`` reading the first one's rejects.jsonl as
    runs)."""
    out = getattr(args, "out", None)
    if out is None or args.command == "demo":
        return
    where = Path(out).resolve()
    for name in _INPUTS:
        given = getattr(args, name, None)
        for path in given if isinstance(given, list) else [given]:
            if isinstance(path, Path) and path.is_dir():
                folder = path.resolve()
                if where == folder or folder in where.parents:
                    raise InputError(f"--out {out}: inside the input folder {path}; a later "
                                     "run would read these outputs as inputs: write them to "
                                     "another folder")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``grade-kit``; returns the exit code: 0 done, 1 when nothing could go on (one
    ``error:`` line on stderr; with ``--strict``, also when records were rejected), 2 for a
    command-line usage error, 130 when interrupted (SIGINT, Ctrl-C: one ``error:`` line);
    SIGTERM ends a command with ``SystemExit(143)`` once its clean-ups ran
    (:func:`_terminated_as_exit`). No input ever produces a traceback; set
    ``GRADE_KIT_DEBUG=1`` to see one for an internal error. Everything a command prints
    goes through :func:`~grade_kit.text.visible` (no control or bidirectional character of
    an input reaches the terminal raw)."""
    args = build_parser().parse_args(argv)
    with _visible_output():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """One parsed command, its errors as one line (see :func:`main`)."""
    try:
        _refuse_out_in_an_input(args)
        with _terminated_as_exit():
            code: int = args.func(args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C: the clean-ups ran; every file is whole or absent
        print("error: interrupted (every file written is whole; the command did not finish)",
              file=sys.stderr)
        return 130
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # the last line of defence: one line, never a traceback
        if os.environ.get("GRADE_KIT_DEBUG"):
            raise
        print(f"error: internal error ({type(exc).__name__}: {exc}); please report it with "
              "the input (GRADE_KIT_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
