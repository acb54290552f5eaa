"""End-to-end timing, working time, other events, timeouts, limits and failures, tool calls
(docs/methodology.md §4 "Timing", "Limits", "Tool calls").

Every figure is over primary runs in the plan (``run_ids``); re-runs are listed, never used as
samples. A missing event is missing, never 0: each metric carries its own n.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from grade_kit.exact import divide, seconds_between
from grade_kit.schema import (
    SOURCE_TOTAL_SLACK_S,
    LabelledSummary,
    LimitSummary,
    OrderViolation,
    StopSummary,
    Summary,
    Timing,
    ToolCalls,
    ToolNameCount,
)
from grade_kit.standard.stats import summarize, summary_frame, summary_of

__all__ = [
    "CHANNEL",
    "E2E_DEFINITION",
    "E2E_WITHOUT_CHANNEL",
    "OUTCOME_LABEL",
    "PLATFORM_PROXY_LABEL",
    "RECORDED_BASIS",
    "SPAN_LABEL",
    "UNIQUE_BASIS",
    "e2e_frame",
    "event_offsets",
    "per_question_median",
    "timing_summary",
    "tool_call_frame",
    "tool_call_summaries",
    "tool_call_summary",
    "unique_tool_calls",
    "working_frame",
]

START, END, STOPPED = "submitted", "received", "stopped"
PLATFORM = ("platform_created", "platform_sent")
PLATFORM_PROXY_LABEL = ("proxy: platform_created -> platform_sent as the platform logged it; "
                        "not end-to-end time as the user waited")
CHANNEL = ("channel_overhead_started", "channel_overhead_ended")
"""The span of channel overhead an agent reports (reply cards, link resolution): its own
metric, excluded from E2E only by the explicit option ``exclude_channel_overhead``."""
E2E_DEFINITION = "received - submitted"
E2E_WITHOUT_CHANNEL = ("received - submitted - channel overhead (agent-reported "
                       "channel_overhead_ended - channel_overhead_started, excluded by the "
                       "explicit option exclude_channel_overhead)")
SPAN_LABEL = ("first-to-last tool event span: includes model reasoning and waiting between "
              "calls, not tool execution time alone")
OUTCOME_LABEL = ("time to outcome: received (delivered) or stopped (limit) - submitted, over "
                 "every attempted run that ended with an outcome; E2E covers delivered runs "
                 "only")
UNIQUE_BASIS = "unique call ids"
RECORDED_BASIS = ("calls as recorded: some run repeats a call id, so unique ids would "
                  "undercount distinct calls")


def event_offsets(runs: pl.DataFrame, events: pl.DataFrame, start: str,
                  end: str) -> pl.DataFrame:
    """``end - start`` in seconds for every run of ``runs`` carrying both events.

    Returns:
        run_id, setup, task_id, seconds.
    """
    return _offsets(runs, _by_run(events, (start, end)), start, end)


def _by_run(events: pl.DataFrame, names: Sequence[str]) -> pl.DataFrame:
    """The instants of the events ``names``, one row per run_id and one column per event
    name present."""
    some = events.filter(pl.col("event").is_in(list(names)))
    if not some.height:
        return pl.DataFrame(schema={"run_id": pl.String})
    return some.pivot(on="event", index="run_id", values="at")


def _offsets(runs: pl.DataFrame, wide: pl.DataFrame, start: str, end: str) -> pl.DataFrame:
    """:func:`event_offsets` from the events already by run (:func:`_by_run`)."""
    if start not in wide.columns or end not in wide.columns:
        return pl.DataFrame(schema={"run_id": pl.String, "setup": pl.String,
                                    "task_id": pl.String, "seconds": pl.Float64})
    both = (runs.select("run_id", "setup", "task_id")
            .join(wide.select("run_id", start, end), on="run_id", how="inner")
            .filter(pl.col(start).is_not_null() & pl.col(end).is_not_null()))
    return both.select("run_id", "setup", "task_id").with_columns(
        seconds_between(both, pl.col(end), pl.col(start)).alias("seconds"))


def _e2e_pairs(delivered: pl.DataFrame, events: pl.DataFrame,
               exclude_channel_overhead: bool) -> pl.DataFrame:
    """E2E of every delivered run carrying both events, in any order (negative included).

    Without the channel overhead, the overhead (where its two events are in a possible
    order) is taken off in whole microseconds before the one division by 10^6, so the
    seconds are the exact difference correctly rounded, not a difference of two rounded
    figures (531.969375 s - 408.538600 s is 123.430775 s, where 123.43077500000004 is what
    subtracting the rounded seconds gives)."""
    e2e = event_offsets(delivered, events, START, END)
    if not exclude_channel_overhead:
        return e2e
    at = events.filter(pl.col("event").is_in([START, END, *CHANNEL]))
    wide = (at.pivot(on="event", index="run_id", values="at") if at.height
            else pl.DataFrame({"run_id": []}, schema={"run_id": pl.String}))
    for name in (START, END, *CHANNEL):
        if name not in wide.columns:
            wide = wide.with_columns(pl.lit(None, pl.Datetime("us", "UTC")).alias(name))
    overhead = pl.col(CHANNEL[1]) - pl.col(CHANNEL[0])
    none = pl.duration(microseconds=0)
    taken_off = pl.when(overhead >= none).then(overhead).otherwise(none).fill_null(none)
    both = e2e.drop("seconds").join(wide.select("run_id", START, END, *CHANNEL),
                                    on="run_id", how="left")
    return both.select(*(c for c in e2e.columns if c != "seconds")).with_columns(
        seconds_between(both, pl.col(END) - taken_off, pl.col(START)).alias("seconds"))


def e2e_frame(runs: pl.DataFrame, events: pl.DataFrame, *,
              exclude_channel_overhead: bool = False) -> pl.DataFrame:
    """E2E = received - submitted (seconds) of delivered runs carrying both events in a
    possible order: a run received before it was submitted is never a sample (its timing
    summary lists it under ``out_of_order``), nor one whose E2E exceeds its source's own
    total time by more than :data:`SOURCE_TOTAL_SLACK_S` (counted under
    ``e2e_beyond_source_total``).

    Args:
        runs: The runs frame.
        events: The events frame.
        exclude_channel_overhead: Subtract each run's agent-reported channel overhead
            (:data:`CHANNEL`; a run reporting none keeps its E2E); default False. Results
            label E2E :data:`E2E_WITHOUT_CHANNEL` then.

    Returns:
        run_id, setup, task_id, seconds (every value >= 0).
    """
    delivered = runs.filter(pl.col("status") == "delivered")
    e2e = _e2e_pairs(delivered, events, exclude_channel_overhead)
    return e2e.filter((pl.col("seconds") >= 0) & ~_beyond_source_total(e2e, delivered))


def _beyond_source_total(e2e: pl.DataFrame, runs: pl.DataFrame) -> pl.Series:
    """Per row of ``e2e``: its seconds exceed the run's own source total time (``runs``'
    ``source_total_s``) by more than :data:`SOURCE_TOTAL_SLACK_S`."""
    total = e2e.select("run_id").join(runs.select("run_id", "source_total_s"), on="run_id",
                                      how="left", maintain_order="left")
    return ((e2e.get_column("seconds") > total.get_column("source_total_s")
             + SOURCE_TOTAL_SLACK_S).fill_null(False))


def working_frame(runs: pl.DataFrame) -> pl.DataFrame:
    """Working time of delivered runs that carry it (``working_s``, as their source recorded
    it; docs/methodology.md §4 "Timing"): never a stand-in for E2E.

    Returns:
        run_id, setup, task_id, seconds.
    """
    return runs.filter((pl.col("status") == "delivered") & pl.col("working_s").is_not_null()
                       ).select("run_id", "setup", "task_id", seconds=pl.col("working_s"))


def per_question_median(e2e: pl.DataFrame, name: str = "e2e_median_s") -> pl.DataFrame:
    """Per (setup, task): the median of ``seconds`` across its runs (mean of the middle two),
    the one computation of the per-question median (docs/methodology.md §4 "Timing").

    Args:
        e2e: run_id, setup, task_id, seconds (:func:`e2e_frame` or :func:`working_frame`).
        name: The median's column; default ``e2e_median_s``.

    Returns:
        setup, task_id, ``name`` (sorted by setup, task).
    """
    ordered = pl.col("seconds").sort()
    # (lower middle + upper middle) / 2: for an odd count both are the middle value, and
    # (x + x) / 2 == x exactly; for an even count it is the mean of the middle two, the same
    # float operation as grade_kit.standard.stats.median.
    return (e2e.group_by("setup", "task_id")
            .agg(lo=ordered.get((pl.len() - 1) // 2), hi=ordered.get(pl.len() // 2))
            .select("setup", "task_id", ((pl.col("lo") + pl.col("hi")) / 2).alias(name))
            .sort("setup", "task_id"))


def unique_tool_calls(runs: pl.DataFrame, tool_calls: pl.DataFrame) -> pl.DataFrame:
    """Per run that exposes tool events: unique call ids and calls as recorded.

    Returns:
        run_id, unique, recorded (0 for an exposed run with no calls): one row per row of
        ``runs`` that exposes tools, in ``runs``' order.
    """
    exposed = runs.filter(pl.col("tools_exposed")).select("run_id")
    return exposed.join(
        tool_calls.group_by("run_id").agg(unique=pl.col("call_id").n_unique(),
                                          recorded=pl.len()),
        on="run_id", how="left", maintain_order="left",
    ).with_columns(pl.col("unique").fill_null(0).cast(pl.Int64),
                   pl.col("recorded").fill_null(0).cast(pl.Int64))


def _other_events(delivered: pl.DataFrame, events: pl.DataFrame,
                  violations: list[pl.DataFrame]) -> dict[str, Summary]:
    """Every event other than the standard's, as event - submitted, in one pass over the
    events (the work grows with the events, not with how many names they use)."""
    starts = events.filter(pl.col("event") == START).select("run_id", start_at="at")
    rest = (events.filter(~pl.col("event").is_in([START, END, STOPPED, *PLATFORM, *CHANNEL]))
            .join(delivered.select("run_id", "task_id"), on="run_id")
            .join(starts, on="run_id"))
    rest = rest.with_columns(seconds_between(rest, pl.col("at"), pl.col("start_at"))
                             .alias("seconds"))
    violations.append(rest.filter(pl.col("seconds") < 0).select(
        "run_id", "task_id", first=pl.lit(START), then=pl.col("event"), seconds="seconds"))
    grouped = (rest.filter(pl.col("seconds") >= 0).group_by("event")
               .agg(pl.col("seconds")).sort("event"))
    out = {name: summarize(values) for name, values in grouped.iter_rows()}
    for name in sorted(set(rest.get_column("event").to_list()) - set(out)):
        out[name] = summarize([])  # every sample of it was out of order
    return dict(sorted(out.items()))


def timing_summary(runs: pl.DataFrame, events: pl.DataFrame,
                   run_ids: Sequence[str], *, exclude_channel_overhead: bool = False
                   ) -> Timing:
    """Timing of the primary runs ``run_ids`` (one setup's planned slots, or a subset).

    - ``e2e_s``: received - submitted of delivered runs carrying both; n, mean, P50, P90
      (nearest rank), min, max; ``missing_timestamps`` counts delivered runs lacking either,
      ``e2e_out_of_order`` those received before submitted (never a sample).
    - ``out_of_order``: every event pair in an impossible order (end before start), with
      its run and the negative difference; each is left out of its metric, the run's answer
      and scores untouched.
    - ``per_question_median_s``: per task, the median E2E across its repeats.
    - ``events``: every other event (first_progress, first_token, ...) as its own metric,
      event - submitted, with its own n; never substituted for E2E.
    - ``platform_e2e_s``: platform_sent - platform_created, labelled a proxy.
    - ``interaction``: delivered runs labelled with a protocol follow-up, an ad hoc follow-up
      or as resumed (their E2E covers the whole interaction).
    - ``channel_overhead_s``: agent-reported channel overhead (:data:`CHANNEL`), its own
      metric; subtracted from E2E only with ``exclude_channel_overhead`` (``e2e_definition``
      says which E2E this is).
    - ``working_s``: working time of delivered runs as their source recorded it, its own
      metric with its own n (:func:`working_frame`).
    - ``e2e_beyond_source_total``: delivered runs whose E2E exceeds the source's own total
      time by more than :data:`SOURCE_TOTAL_SLACK_S`, left out of E2E.
    - ``time_to_outcome_s``: the E2E samples and the limit runs' stopped - submitted
      together, labelled (:data:`OUTCOME_LABEL`).
    - ``timeouts`` / ``limits`` (stopped by a limit of the source's, counted per type) /
      ``failures`` (failed or cancelled): count and rate over attempted runs, and their
      waiting time (stopped - submitted) as a separate summary, never latency.
    """
    mine = runs.filter(pl.col("run_id").is_in(pl.Series(list(run_ids), dtype=pl.String)
                                              .implode()))
    delivered = mine.filter(pl.col("status") == "delivered")
    mine_events = events.filter(pl.col("run_id").is_in(mine.get_column("run_id").implode()))
    violations: list[pl.DataFrame] = []
    # Every pair below from one table of the runs' instants (one pivot, not one a pair).
    wide = _by_run(mine_events, (START, END, STOPPED, *CHANNEL, *PLATFORM))

    def offsets(of: pl.DataFrame, start: str, end: str) -> list[float]:
        """``end - start`` samples; a pair in an impossible order is set aside and listed."""
        both = _offsets(of, wide, start, end)
        violations.append(both.filter(pl.col("seconds") < 0).select(
            "run_id", "task_id", first=pl.lit(start), then=pl.lit(end), seconds="seconds"))
        return both.filter(pl.col("seconds") >= 0).get_column("seconds").to_list()

    e2e_all = _e2e_pairs(delivered, mine_events, exclude_channel_overhead)
    beyond = _beyond_source_total(e2e_all, delivered)
    e2e = e2e_all.filter((pl.col("seconds") >= 0) & ~beyond)
    n_beyond = int((beyond & (e2e_all.get_column("seconds") >= 0)).sum())
    offsets(delivered, START, END)
    overhead = offsets(delivered, *CHANNEL)
    per_question = dict(per_question_median(e2e).select("task_id", "e2e_median_s").iter_rows())
    event_metrics = _other_events(delivered, mine_events, violations)
    platform = offsets(mine, *PLATFORM)
    attempted = mine.height

    def waiting(statuses: Sequence[str]) -> StopSummary:
        stopped = mine.filter(pl.col("status").is_in(list(statuses)))
        return StopSummary(count=stopped.height,
                           rate=stopped.height / attempted if attempted else None,
                           attempted=attempted,
                           waiting_s=summarize(offsets(stopped, START, STOPPED)))

    timeouts, failures = waiting(["timeout"]), waiting(["failed", "cancelled"])
    limited = mine.filter(pl.col("status") == "limit")
    outcome = [*e2e.get_column("seconds").to_list(),  # delivered E2E, then limit runs' stops
               *_offsets(limited, wide, START, STOPPED).filter(pl.col("seconds") >= 0)
               .get_column("seconds").to_list()]
    limits = LimitSummary(
        **waiting(["limit"]).model_dump(),
        by_type={str(kind): int(n) for kind, n in limited.group_by("limit_type").len()
                 .sort("limit_type").iter_rows()})
    by_clock = (e2e.join(mine.select("run_id", "clock", "endpoint_offset_s"), on="run_id")
                .with_columns(pl.col("clock").fill_null("unrecorded"))
                .group_by("clock").agg(pl.len(), pl.col("endpoint_offset_s").drop_nulls())
                .sort("clock"))
    clocks = {c: n for c, n, _ in by_clock.iter_rows()}
    clock_offsets = {str(c): summarize(list(offsets)).p50 for c, _, offsets
                     in by_clock.iter_rows()}
    out_of_order = pl.concat(violations).sort("run_id", "first", "then")
    interaction = {
        "protocol_follow_up": delivered.filter(pl.col("follow_up") == "protocol").height,
        "ad_hoc_follow_up": delivered.filter(pl.col("follow_up") == "ad_hoc").height,
        "resumed": delivered.filter(pl.col("resumed")).height}
    return Timing(
        e2e_s=summarize(e2e.get_column("seconds").to_list()),
        e2e_definition=E2E_WITHOUT_CHANNEL if exclude_channel_overhead else E2E_DEFINITION,
        channel_overhead_s=summarize(overhead),
        delivered=delivered.height,
        missing_timestamps=delivered.height - e2e_all.height,
        e2e_out_of_order=e2e_all.height - e2e.height - n_beyond,
        e2e_beyond_source_total=n_beyond,
        time_to_outcome_s=LabelledSummary(label=OUTCOME_LABEL, **summarize(outcome).model_dump()),
        clocks={str(k): int(v) for k, v in clocks.items()},
        clock_offsets_s=clock_offsets,
        interaction=interaction,
        out_of_order=[OrderViolation(**row) for row in out_of_order.iter_rows(named=True)],
        per_question_median_s=per_question,
        events=event_metrics,
        platform_e2e_s=(LabelledSummary(label=PLATFORM_PROXY_LABEL,
                                        **summarize(platform).model_dump())
                        if platform else None),
        working_s=summarize(working_frame(delivered).get_column("seconds").to_list()),
        timeouts=timeouts,
        limits=limits,
        failures=failures,
    )


def tool_call_frame(runs: pl.DataFrame, tool_calls: pl.DataFrame, slots: pl.DataFrame,
                    setups: Sequence[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Tool calls of the primary runs that fill ``slots``, every setup at once
    (docs/methodology.md §4 "Tool calls").

    Coverage = delivered runs exposing tool events (``tool_calls`` not null) / delivered
    runs. Calls are counted by unique id per run; ``recorded_calls`` and
    ``runs_with_repeated_ids`` show where a source reuses ids. The headline per run is the
    unique count, or the recorded count when some delivered run of the setup repeats an id
    (``headline_basis`` says which); ``attempted_per_run`` counts the same way over exposed
    runs of every status. The first-to-last tool event span (``span_s``) is labelled as
    including reasoning and waiting.

    Args:
        runs: The runs frame.
        tool_calls: The tool_calls frame.
        slots: The filled planned slots summarised (run_id; a subset's, or all).
        setups: The setups summarised, in order (one row each, with no run too).

    Returns:
        One row per setup: ``delivered``, ``runs_exposed``, ``coverage``, ``unique_calls``,
        ``recorded_calls``, ``runs_with_repeated_ids``, ``headline_basis``,
        ``attempted_runs_exposed`` and the summaries (:func:`~grade_kit.standard.stats.
        summary_frame`) ``per_run_``, ``recorded_per_run_``, ``headline_per_run_``,
        ``attempted_per_run_`` and ``span_s_``; and the calls by tool name (setup, name,
        calls, runs; by setup and name).
    """
    keys = pl.DataFrame({"setup": list(setups)}, schema={"setup": pl.String})
    attempted = runs.join(slots.select("run_id"), on="run_id", how="semi")
    delivered = attempted.filter(pl.col("status") == "delivered")
    owner = attempted.select("run_id", "setup")

    def counted(of: pl.DataFrame) -> pl.DataFrame:
        """Unique and recorded calls of each run of ``of`` exposing tools, with its setup
        and its count as the headline counts it (set below)."""
        exposed = of.filter(pl.col("tools_exposed")).select("run_id")
        calls = tool_calls.join(exposed, on="run_id", how="inner", maintain_order="left")
        return unique_tool_calls(of, calls).join(owner, on="run_id", how="left",
                                                 maintain_order="left")

    per_run = counted(delivered)
    totals = per_run.group_by("setup").agg(
        unique_calls=pl.col("unique").sum(), recorded_calls=pl.col("recorded").sum(),
        runs_with_repeated_ids=(pl.col("recorded") > pl.col("unique")).sum())
    repeats_ids = totals.select("setup", recorded=pl.col("runs_with_repeated_ids") > 0)

    def headline(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.join(repeats_ids, on="setup", how="left", maintain_order="left",
                          suffix="_basis").with_columns(headline=pl.when(
                              pl.col("recorded_basis")).then("recorded").otherwise("unique"))

    per_run, per_attempt = headline(per_run), headline(counted(attempted))
    calls = tool_calls.join(delivered.filter(pl.col("tools_exposed")).select("run_id", "setup"),
                            on="run_id", how="inner", maintain_order="left")
    bounds = (calls.with_columns(last=pl.coalesce("ended", "started"))
              .group_by("run_id", "setup").agg(pl.col("started").min(), pl.col("last").max())
              .filter(pl.col("started").is_not_null() & pl.col("last").is_not_null()))
    spans = bounds.select("setup", seconds=seconds_between(bounds, pl.col("last"),
                                                           pl.col("started")))
    counts = pl.concat([keys, *(
        keys.join(frame.group_by("setup").agg(**{name: pl.len()}), on="setup", how="left",
                  maintain_order="left").drop("setup")
        for name, frame in (("delivered", delivered), ("runs_exposed", per_run),
                            ("attempted_runs_exposed", per_attempt)))], how="horizontal")
    rows = counts.join(totals, on="setup", how="left", maintain_order="left").with_columns(
        pl.exclude("setup").fill_null(0).cast(pl.Int64))
    rows = rows.with_columns(
        divide(rows, pl.col("runs_exposed"), pl.col("delivered")).alias("coverage"),
        headline_basis=pl.when(pl.col("runs_with_repeated_ids") > 0).then(
            pl.lit(RECORDED_BASIS)).otherwise(pl.lit(UNIQUE_BASIS)))
    for prefix, frame, column in (("per_run_", per_run, "unique"),
                                  ("recorded_per_run_", per_run, "recorded"),
                                  ("headline_per_run_", per_run, "headline"),
                                  ("attempted_per_run_", per_attempt, "headline"),
                                  ("span_s_", spans, "seconds")):
        rows = rows.join(summary_frame(frame, ["setup"], column, keys, prefix), on="setup",
                         how="left", maintain_order="left")
    by_name = (calls.unique(["run_id", "call_id"], keep="first", maintain_order=True)
               .group_by("setup", "name").agg(calls=pl.len(), runs=pl.col("run_id").n_unique())
               .sort("setup", "name"))
    return rows, by_name


def tool_call_summaries(rows: pl.DataFrame, by_name: pl.DataFrame) -> dict[str, ToolCalls]:
    """The typed tool-call summary of each row of :func:`tool_call_frame`, by setup."""
    names: dict[str, dict[str, ToolNameCount]] = {}
    for setup, name, n_calls, n_runs in by_name.iter_rows():
        names.setdefault(setup, {})[str(name)] = ToolNameCount(calls=n_calls, runs=n_runs)
    return {row["setup"]: ToolCalls(
        runs_exposed=row["runs_exposed"], delivered=row["delivered"], coverage=row["coverage"],
        per_run=summary_of(row, "per_run_"), recorded_per_run=summary_of(row, "recorded_per_run_"),
        unique_calls=row["unique_calls"], recorded_calls=row["recorded_calls"],
        runs_with_repeated_ids=row["runs_with_repeated_ids"],
        by_name=names.get(row["setup"], {}),
        span_s=LabelledSummary(label=SPAN_LABEL, **summary_of(row, "span_s_").model_dump()),
        headline_per_run=summary_of(row, "headline_per_run_"),
        headline_basis=row["headline_basis"],
        attempted_runs_exposed=row["attempted_runs_exposed"],
        attempted_per_run=summary_of(row, "attempted_per_run_"),
    ) for row in rows.iter_rows(named=True)}


def tool_call_summary(runs: pl.DataFrame, tool_calls: pl.DataFrame,
                      run_ids: Sequence[str]) -> ToolCalls:
    """:func:`tool_call_frame` of the primary runs ``run_ids`` as one group, typed
    (:func:`tool_call_summaries`)."""
    one = runs.with_columns(setup=pl.lit("", dtype=pl.String))
    slots = pl.DataFrame({"run_id": list(run_ids)}, schema={"run_id": pl.String})
    return tool_call_summaries(*tool_call_frame(one, tool_calls, slots, [""]))[""]
