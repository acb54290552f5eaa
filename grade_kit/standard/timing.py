"""End-to-end timing, working time, other events, timeouts, limits and failures, tool calls
(docs/methodology.md §4 "Timing", "Limits", "Tool calls").

Every figure is over primary runs in the plan (``run_ids``); re-runs are listed, never used as
samples. A missing event is missing, never 0: each metric carries its own n.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from grade_kit.exact import divide, seconds_between
from grade_kit.schema import (
    SOURCE_TOTAL_SLACK_S,
    Interval,
    LabelledSummary,
    LimitSummary,
    OrderViolation,
    StopSummary,
    Summary,
    Timing,
    ToolCalls,
    ToolNameCount,
)
from grade_kit.standard.clustered import clustered_mean_ci
from grade_kit.standard.stats import (
    per_setup,
    rows_by_setup,
    sorted_median,
    summary_frame,
    summary_of,
)

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
    return (runs.select("run_id", "setup", "task_id", "status", "working_s")
            .filter((pl.col("status") == "delivered") & pl.col("working_s").is_not_null())
            .select("run_id", "setup", "task_id", seconds=pl.col("working_s")))


def per_question_median(e2e: pl.DataFrame, name: str = "e2e_median_s") -> pl.DataFrame:
    """Per (setup, task): the median of ``seconds`` across its runs (mean of the middle two),
    the one computation of the per-question median (docs/methodology.md §4 "Timing").

    Args:
        e2e: run_id, setup, task_id, seconds (:func:`e2e_frame` or :func:`working_frame`).
        name: The median's column; default ``e2e_median_s``.

    Returns:
        setup, task_id, ``name`` (sorted by setup, task).
    """
    return (e2e.group_by("setup", "task_id")
            .agg(sorted_median(pl.col("seconds").sort()).alias(name))
            .sort("setup", "task_id"))


def counted_calls() -> pl.Expr:
    """Whether each record of a tool_calls frame is a call of its own (docs/methodology.md §4
    "Tool calls"): every record but one that repeats an earlier record of its run in id,
    name and arguments (the same call recorded again). A record whose id is empty or is
    the tool's name is always a call: such ids name no call."""
    return ((pl.col("call_id") == "") | (pl.col("call_id") == pl.col("name"))
            | pl.struct("run_id", "call_id", "name", "arguments").is_first_distinct())


def calls_per_run(runs: pl.DataFrame, tool_calls: pl.DataFrame) -> pl.DataFrame:
    """Per run that exposes tool events: its calls (:func:`counted_calls`, or the frame's own
    ``counted`` column where it has one) and its records.

    Returns:
        run_id, calls, recorded (0 for an exposed run with no calls): one row per row of
        ``runs`` that exposes tools, in ``runs``' order.
    """
    exposed = runs.select("run_id", "tools_exposed").filter(pl.col("tools_exposed"))
    decided = (tool_calls.select("run_id", "counted") if "counted" in tool_calls.columns
               else tool_calls.select("run_id", counted=counted_calls()))
    return exposed.select("run_id").join(
        decided.group_by("run_id").agg(calls=pl.col("counted").sum(), recorded=pl.len()),
        on="run_id", how="left", maintain_order="left",
    ).with_columns(pl.col("calls").fill_null(0).cast(pl.Int64),
                   pl.col("recorded").fill_null(0).cast(pl.Int64))


@dataclass(frozen=True)
class TimingFrames:
    """:func:`timing_frame`: one row per setup, and the parts of its timing that are maps
    and lists, as frames with a ``setup`` column (each sorted by setup, then as listed)."""

    rows: pl.DataFrame
    """setup, attempted, delivered, missing_timestamps, e2e_out_of_order,
    e2e_beyond_source_total, timeouts, failures, limits and their rates over attempted runs
    (``timeout_rate``, ...), ``limit_types`` (``type n, ...``), the interaction counts, and the
    summaries (:func:`~grade_kit.standard.stats.summary_frame`) ``e2e_``, ``working_``,
    ``outcome_``, ``channel_``, ``platform_``, ``timeouts_waiting_``,
    ``failures_waiting_``, ``limits_waiting_``."""
    per_question: pl.DataFrame
    """setup, task_id, e2e_median_s."""
    events: pl.DataFrame
    """setup, event and its summary (every event other than the standard's)."""
    clocks: pl.DataFrame
    """setup, clock, samples, offset_p50 (E2E samples per clock, the endpoint offset)."""
    limit_types: pl.DataFrame
    """setup, limit_type, runs."""
    out_of_order: pl.DataFrame
    """setup and the fields of :class:`~grade_kit.schema.OrderViolation`."""


_STOPS = {"timeouts": ["timeout"], "failures": ["failed", "cancelled"], "limits": ["limit"]}
"""Each kind of stop and the statuses it counts."""
_RATES = {"timeouts": "timeout_rate", "failures": "failure_rate", "limits": "limit_rate"}


def mean_intervals(samples: pl.DataFrame, column: str, prefix: str, keys: pl.DataFrame,
                   clusters: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per setup of ``keys``: the mean of ``column`` over ``samples`` (setup, task_id,
    column) with its clustered standard error and 95% normal interval
    (:func:`~grade_kit.standard.clustered.clustered_mean_ci`, docs/methodology.md §4
    "Clusters"): ``<prefix>mean_se``, ``<prefix>mean_ci_low``, ``<prefix>mean_ci_high``;
    the clusters are the samples' questions, or ``clusters`` (task_id, cluster)."""
    owned = samples.select("setup", "task_id", column)
    owned = (owned.rename({"task_id": "cluster"}) if clusters is None else
             owned.join(clusters, on="task_id", how="left").drop("task_id"))
    ci = clustered_mean_ci(owned, ["setup"], column)
    return keys.join(ci, on="setup", how="left", maintain_order="left").select(
        "setup", *(pl.col(f"{column}_{name}").alias(f"{prefix}mean_{name}")
                   for name in ("se", "ci_low", "ci_high")))


def _interval(row: dict[str, Any], prefix: str) -> Interval | None:
    """The interval ``<prefix>ci_low``, ``<prefix>ci_high`` of a frame's row (None where
    null)."""
    low, high = row.get(f"{prefix}ci_low"), row.get(f"{prefix}ci_high")
    return None if low is None or high is None else Interval(low=low, high=high)


def timing_frame(runs: pl.DataFrame, events: pl.DataFrame, slots: pl.DataFrame,
                 setups: Sequence[str], *, exclude_channel_overhead: bool = False,
                 clusters: pl.DataFrame | None = None) -> TimingFrames:
    """Timing of the primary runs that fill ``slots``, every setup at once.

    - E2E (``e2e_``): received - submitted of delivered runs carrying both;
      ``missing_timestamps`` counts delivered runs lacking either, ``e2e_out_of_order``
      those received before submitted (never a sample), ``e2e_beyond_source_total`` those
      whose E2E exceeds the source's own total time by more than
      :data:`SOURCE_TOTAL_SLACK_S`.
    - ``out_of_order``: every event pair in an impossible order (end before start), with its
      run and the negative difference; each is left out of its metric, the run's answer and
      scores untouched.
    - ``per_question``: per task, the median E2E across its repeats.
    - ``events``: every other event (first_progress, first_token, ...) as its own metric,
      event - submitted, with its own n; never substituted for E2E.
    - ``platform_``: platform_sent - platform_created, a proxy (:data:`PLATFORM_PROXY_LABEL`).
    - the interaction counts: delivered runs labelled with a protocol follow-up, an ad hoc
      follow-up or as resumed (their E2E covers the whole interaction).
    - ``channel_``: agent-reported channel overhead (:data:`CHANNEL`), its own metric;
      subtracted from E2E only with ``exclude_channel_overhead``.
    - ``working_``: working time of delivered runs as their source recorded it
      (:func:`working_frame`).
    - ``outcome_``: the E2E samples and the limit runs' stopped - submitted together
      (:data:`OUTCOME_LABEL`).
    - ``timeouts`` / ``limits`` (stopped by a limit of the source's, counted per type) /
      ``failures`` (failed or cancelled): counted over attempted runs, with their waiting
      time (stopped - submitted) as a separate summary, never latency.

    Args:
        runs: The runs frame.
        events: The events frame.
        slots: The filled planned slots summarised (run_id; a subset's, or all).
        setups: The setups summarised, in order (one row each, with no run too).
        exclude_channel_overhead: Subtract agent-reported channel overhead from E2E;
            default False.

    Returns:
        The :class:`TimingFrames`, one row (and its maps and lists) per setup of
        ``setups``.
    """
    keys = pl.DataFrame({"setup": list(setups)}, schema={"setup": pl.String})
    # the columns timing reads, then the rows (all of a million runs' is 0.4 GB)
    mine = runs.select(_TIMING_COLUMNS).join(slots.select("run_id"), on="run_id", how="semi")
    delivered = mine.filter(pl.col("status") == "delivered")
    mine_events = events.join(mine.select("run_id"), on="run_id", how="semi")
    violations: list[pl.DataFrame] = []
    # Every pair below from one table of the runs' instants (one pivot, not one a pair).
    wide = _by_run(mine_events, (START, END, STOPPED, *CHANNEL, *PLATFORM))

    def offsets(of: pl.DataFrame, start: str, end: str) -> pl.DataFrame:
        """``end - start`` samples; a pair in an impossible order is set aside and listed."""
        both = _offsets(of, wide, start, end)
        violations.append(both.filter(pl.col("seconds") < 0).select(
            "setup", "run_id", "task_id", first=pl.lit(start), then=pl.lit(end),
            seconds="seconds"))
        return both.filter(pl.col("seconds") >= 0)

    def summary(frame: pl.DataFrame, prefix: str, column: str = "seconds") -> pl.DataFrame:
        return summary_frame(frame, ["setup"], column, keys, prefix).drop("setup")

    def count(frame: pl.DataFrame, name: str) -> pl.DataFrame:
        return per_setup(keys, frame, **{name: pl.len()})

    e2e_all = _e2e_pairs(delivered, mine_events, exclude_channel_overhead)
    e2e_all = e2e_all.with_columns(beyond=_beyond_source_total(e2e_all, delivered))
    e2e = e2e_all.filter((pl.col("seconds") >= 0) & ~pl.col("beyond"))
    beyond = e2e_all.filter(pl.col("beyond") & (pl.col("seconds") >= 0))
    offsets(delivered, START, END)  # its violations (E2E itself may leave out the channel)
    parts = [keys, count(mine, "attempted"), count(delivered, "delivered"),
             count(e2e_all, "paired"), count(e2e, "samples"),
             count(beyond, "e2e_beyond_source_total"),
             count(delivered.filter(pl.col("follow_up") == "protocol"), "protocol_follow_up"),
             count(delivered.filter(pl.col("follow_up") == "ad_hoc"), "ad_hoc_follow_up"),
             count(delivered.filter(pl.col("resumed")), "resumed"),
             summary(e2e, "e2e_"), summary(offsets(delivered, *CHANNEL), "channel_"),
             summary(offsets(mine, *PLATFORM), "platform_"),
             summary(working_frame(delivered), "working_")]
    for kind, statuses in _STOPS.items():
        stopped = mine.filter(pl.col("status").is_in(statuses))
        parts += [count(stopped, kind), summary(offsets(stopped, START, STOPPED),
                                                f"{kind}_waiting_")]
    limited = mine.filter(pl.col("status") == "limit")
    outcome = pl.concat([e2e.select("setup", "seconds"), _offsets(limited, wide, START, STOPPED)
                         .filter(pl.col("seconds") >= 0).select("setup", "seconds")])
    parts.append(summary(outcome, "outcome_"))
    rows = pl.concat(parts, how="horizontal").join(
        mean_intervals(e2e, "seconds", "e2e_", keys, clusters), on="setup", how="left",
        maintain_order="left")
    limit_types = (limited.group_by("setup", "limit_type").agg(runs=pl.len())
                   .sort("setup", "limit_type"))
    named = limit_types.group_by("setup", maintain_order=True).agg(limit_types=(
        pl.col("limit_type") + " " + pl.col("runs").cast(pl.String)).str.join(", "))
    rows = rows.with_columns(
        *(divide(rows, pl.col(kind), pl.col("attempted")).alias(rate)  # over attempted runs
          for kind, rate in _RATES.items()),
        missing_timestamps=pl.col("delivered") - pl.col("paired"),
        e2e_out_of_order=pl.col("paired") - pl.col("samples")
        - pl.col("e2e_beyond_source_total")).drop("paired", "samples").join(
        named, on="setup", how="left", maintain_order="left")
    rest = _other_events(delivered, mine_events, violations)
    by_clock = (e2e.join(mine.select("run_id", "clock", "endpoint_offset_s"), on="run_id")
                .with_columns(pl.col("clock").fill_null("unrecorded")))
    clocks = by_clock.group_by("setup", "clock").agg(samples=pl.len()).sort("setup", "clock")
    clocks = clocks.with_columns(summary_frame(  # the offsets' median, null where none
        by_clock, ["setup", "clock"], "endpoint_offset_s", clocks).get_column("p50")
        .alias("offset_p50"))
    return TimingFrames(
        rows=rows,
        per_question=per_question_median(e2e),
        events=rest,
        clocks=clocks,
        limit_types=limit_types,
        out_of_order=pl.concat(violations).sort("setup", "run_id", "first", "then"))


_TIMING_COLUMNS = ("run_id", "setup", "task_id", "status", "follow_up", "resumed", "clock",
                   "endpoint_offset_s", "limit_type", "working_s", "source_total_s")
"""The columns of the runs frame :func:`timing_frame` reads."""


def _other_events(delivered: pl.DataFrame, events: pl.DataFrame,
                  violations: list[pl.DataFrame]) -> pl.DataFrame:
    """Every event other than the standard's, as event - submitted, in one pass over the
    events (the work grows with the events, not with how many names they use): per setup
    and event, its summary (n = 0 where every sample was out of order)."""
    starts = events.filter(pl.col("event") == START).select("run_id", start_at="at")
    rest = (events.filter(~pl.col("event").is_in([START, END, STOPPED, *PLATFORM, *CHANNEL]))
            .join(delivered.select("run_id", "setup", "task_id"), on="run_id")
            .join(starts, on="run_id"))
    rest = rest.with_columns(seconds_between(rest, pl.col("at"), pl.col("start_at"))
                             .alias("seconds"))
    violations.append(rest.filter(pl.col("seconds") < 0).select(
        "setup", "run_id", "task_id", first=pl.lit(START), then=pl.col("event"),
        seconds="seconds"))
    named = rest.select("setup", "event").unique().sort("setup", "event")
    return summary_frame(rest.filter(pl.col("seconds") >= 0), ["setup", "event"], "seconds",
                         named)


def _stop(row: dict[str, Any], kind: str) -> StopSummary:
    """A kind of stop in a row of :func:`timing_frame`: its count and rate over the
    attempted runs (one exact division) and its waiting time."""
    return StopSummary(count=row[kind], rate=row[_RATES[kind]], attempted=row["attempted"],
                       waiting_s=summary_of(row, f"{kind}_waiting_"))


def _labelled(label: str, summary: Summary) -> LabelledSummary:
    return LabelledSummary(label=label, **summary.model_dump())


def timing_summaries(frames: TimingFrames, *,
                     exclude_channel_overhead: bool = False) -> dict[str, Timing]:
    """The typed timing of each setup of :func:`timing_frame`, by setup."""
    questions, events = rows_by_setup(frames.per_question), rows_by_setup(frames.events)
    clocks, limits = rows_by_setup(frames.clocks), rows_by_setup(frames.limit_types)
    violations = rows_by_setup(frames.out_of_order)
    out: dict[str, Timing] = {}
    for row in frames.rows.iter_rows(named=True):
        setup = row["setup"]
        platform = summary_of(row, "platform_")
        out[setup] = Timing(
            e2e_s=summary_of(row, "e2e_"),
            e2e_mean_ci95=_interval(row, "e2e_mean_"),
            e2e_definition=E2E_WITHOUT_CHANNEL if exclude_channel_overhead else E2E_DEFINITION,
            channel_overhead_s=summary_of(row, "channel_"),
            delivered=row["delivered"], missing_timestamps=row["missing_timestamps"],
            e2e_out_of_order=row["e2e_out_of_order"],
            e2e_beyond_source_total=row["e2e_beyond_source_total"],
            time_to_outcome_s=_labelled(OUTCOME_LABEL, summary_of(row, "outcome_")),
            clocks={c["clock"]: c["samples"] for c in clocks.get(setup, [])},
            clock_offsets_s={c["clock"]: c["offset_p50"] for c in clocks.get(setup, [])},
            interaction={k: row[k] for k in ("protocol_follow_up", "ad_hoc_follow_up",
                                             "resumed")},
            out_of_order=[OrderViolation(**v) for v in violations.get(setup, [])],
            per_question_median_s={q["task_id"]: q["e2e_median_s"]
                                   for q in questions.get(setup, [])},
            events={e["event"]: summary_of(e) for e in events.get(setup, [])},
            platform_e2e_s=_labelled(PLATFORM_PROXY_LABEL, platform) if platform.n else None,
            working_s=summary_of(row, "working_"),
            timeouts=_stop(row, "timeouts"), failures=_stop(row, "failures"),
            limits=LimitSummary(**_stop(row, "limits").model_dump(), by_type={
                str(t["limit_type"]): t["runs"] for t in limits.get(setup, [])}),
        )
    return out


def tool_call_frame(runs: pl.DataFrame, tool_calls: pl.DataFrame, slots: pl.DataFrame,
                    setups: Sequence[str], clusters: pl.DataFrame | None = None
                    ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Tool calls of the primary runs that fill ``slots``, every setup at once
    (docs/methodology.md §4 "Tool calls").

    Coverage = delivered runs exposing tool events (``tool_calls`` not null) / delivered
    runs. Each record is decided per call (:func:`counted_calls`); ``recorded_calls`` and
    ``runs_with_duplicate_records`` show where a source records a call twice.
    ``attempted_per_run`` counts the same way over exposed runs of every status. The
    first-to-last tool event span (``span_s``) is labelled as including reasoning and
    waiting.

    Args:
        runs: The runs frame.
        tool_calls: The tool_calls frame.
        slots: The filled planned slots summarised (run_id; a subset's, or all).
        setups: The setups summarised, in order (one row each, with no run too).

    Returns:
        One row per setup: ``delivered``, ``runs_exposed``, ``coverage``, ``calls``,
        ``recorded_calls``, ``runs_with_duplicate_records``, ``attempted_runs_exposed``,
        the summaries (:func:`~grade_kit.standard.stats.summary_frame`) ``per_run_``
        (with ``per_run_mean_ci_low``/``_high``), ``recorded_per_run_``,
        ``attempted_per_run_`` and ``span_s_``; and the calls by tool name (setup, name,
        calls, runs; by setup and name).
    """
    keys = pl.DataFrame({"setup": list(setups)}, schema={"setup": pl.String})
    # the columns needed, then the rows (the whole runs frame copied is 0.4 GB at 1M runs)
    attempted = runs.select("run_id", "setup", "task_id", "status", "tools_exposed").join(
        slots.select("run_id"), on="run_id", how="semi")
    delivered = attempted.filter(pl.col("status") == "delivered")
    # each record decided once, on the whole frame (a record's run is all in it), and only
    # the columns used kept: the ids and arguments, hashed once, are let go; then each run's
    # calls and records counted once, for the delivered and the attempted runs alike
    flagged = tool_calls.select("run_id", "name", "started", "ended", counted=counted_calls())
    by_run = calls_per_run(runs.select("run_id", "tools_exposed"), flagged)

    def counted(of: pl.DataFrame) -> pl.DataFrame:
        """Calls and records of each run of ``of`` exposing tools, with its setup."""
        exposed = of.filter(pl.col("tools_exposed")).select("run_id", "setup", "task_id")
        return exposed.join(by_run, on="run_id", how="left", maintain_order="left")

    per_run, per_attempt = counted(delivered), counted(attempted)
    totals = pl.concat([keys, per_setup(
        keys, per_run, calls=pl.col("calls").sum(), recorded_calls=pl.col("recorded").sum(),
        runs_with_duplicate_records=(pl.col("recorded") > pl.col("calls")).sum())],
        how="horizontal")
    calls = flagged.join(delivered.filter(pl.col("tools_exposed")).select("run_id", "setup"),
                         on="run_id", how="inner", maintain_order="left")
    bounds = (calls.with_columns(last=pl.coalesce("ended", "started"))
              .group_by("run_id", "setup").agg(pl.col("started").min(), pl.col("last").max())
              .filter(pl.col("started").is_not_null() & pl.col("last").is_not_null()))
    spans = bounds.select("setup", seconds=seconds_between(bounds, pl.col("last"),
                                                           pl.col("started")))
    rows = pl.concat([totals, *(per_setup(keys, frame, **{name: pl.len()}) for name, frame in (
        ("delivered", delivered), ("runs_exposed", per_run),
        ("attempted_runs_exposed", per_attempt)))], how="horizontal")
    rows = rows.with_columns(
        divide(rows, pl.col("runs_exposed"), pl.col("delivered")).alias("coverage"))
    for prefix, frame, column in (("per_run_", per_run, "calls"),
                                  ("recorded_per_run_", per_run, "recorded"),
                                  ("attempted_per_run_", per_attempt, "calls"),
                                  ("span_s_", spans, "seconds")):
        rows = rows.join(summary_frame(frame, ["setup"], column, keys, prefix), on="setup",
                         how="left", maintain_order="left")
    rows = rows.join(mean_intervals(per_run, "calls", "per_run_", keys, clusters),
                     on="setup", how="left", maintain_order="left")
    by_name = (calls.filter(pl.col("counted"))
               .group_by("setup", "name").agg(calls=pl.len(), runs=pl.col("run_id").n_unique())
               .sort("setup", "name"))
    return rows, by_name


def tool_call_summaries(rows: pl.DataFrame, by_name: pl.DataFrame) -> dict[str, ToolCalls]:
    """The typed tool-call summary of each row of :func:`tool_call_frame`, by setup."""
    names = {setup: {str(c["name"]): ToolNameCount(calls=c["calls"], runs=c["runs"])
                     for c in counts} for setup, counts in rows_by_setup(by_name).items()}
    return {row["setup"]: ToolCalls(
        runs_exposed=row["runs_exposed"], delivered=row["delivered"], coverage=row["coverage"],
        per_run=summary_of(row, "per_run_"), per_run_ci95=_interval(row, "per_run_mean_"),
        recorded_per_run=summary_of(row, "recorded_per_run_"),
        calls=row["calls"], recorded_calls=row["recorded_calls"],
        runs_with_duplicate_records=row["runs_with_duplicate_records"],
        by_name=names.get(row["setup"], {}),
        span_s=_labelled(SPAN_LABEL, summary_of(row, "span_s_")),
        attempted_runs_exposed=row["attempted_runs_exposed"],
        attempted_per_run=summary_of(row, "attempted_per_run_"),
    ) for row in rows.iter_rows(named=True)}
