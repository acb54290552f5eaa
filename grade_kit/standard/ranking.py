"""Which leaderboard places are separable, and how big a study would separate two setups
(docs/methodology.md §5 "Rank intervals" and "Planning").

- :func:`rank_intervals`: each setup's rank by its mean per-question figure over the
  questions every setup has it for, with a seeded percentile bootstrap interval of that rank
  over questions (resampling questions, the same draw for every setup, so the setups stay
  paired). Two setups whose rank intervals overlap are not separated by this evidence.
- :func:`questions_needed`: for each setup pair, the number of paired questions a two-sided
  test at level alpha would need for the given power at the observed mean paired
  difference and its standard deviation, n = ((z_{1-alpha/2} + z_power) x sd / |mean|)^2,
  rounded up. It is a *conditional estimate*: it assumes the observed difference and spread
  are the true ones, questions are independent, and the normal approximation holds. With R
  repeats per question the spread already includes the repeats' noise; more repeats shrink
  only that part (shown as ``repeats_note``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np
import polars as pl

from grade_kit.exact import fmean
from grade_kit.frames import Frame, like, to_polars
from grade_kit.standard.compare import DEFAULT_RESAMPLES, DEFAULT_SEED, better_side

MIN_RANK_QUESTIONS = 10
"""Below this many paired questions a rank gets no interval (its ``basis`` says so): a
bootstrap over a handful of questions gives intervals that look certain and are not."""


def _matrix(per_question: pl.DataFrame, metric: str) -> tuple[list[str], list[str], np.ndarray]:
    wide = (per_question.filter(pl.col(metric).is_not_null())
            .pivot(on="setup", index="task_id", values=metric).drop_nulls().sort("task_id"))
    setups = sorted(c for c in wide.columns if c != "task_id")
    values = wide.select(setups).to_numpy().astype(float) if setups else np.empty((0, 0))
    return setups, wide.get_column("task_id").to_list(), values


def _ranks(means: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Rank 1 = best; ties share the mean of their ranks (per row)."""
    keys = -means if higher_is_better else means
    order = keys.argsort(axis=-1, kind="stable")
    ranks = np.empty_like(keys)
    rows = np.arange(keys.shape[0])[:, None]
    ranks[rows, order] = np.arange(1, keys.shape[1] + 1)
    for r in range(keys.shape[0]):  # average ties (few setups: cheap)
        for value in np.unique(keys[r]):
            tied = keys[r] == value
            if tied.sum() > 1:
                ranks[r, tied] = ranks[r, tied].mean()
    return ranks


def rank_intervals(per_question: pl.DataFrame, metric: str = "composite", *,
                   higher_is_better: bool = True, seed: int = DEFAULT_SEED,
                   resamples: int = DEFAULT_RESAMPLES, level: float = 0.95) -> pl.DataFrame:
    """Each setup's rank with a percentile bootstrap interval over questions.

    Args:
        per_question: setup, task_id and ``metric`` (for example
            ``ev.standard.per_question``: composite, e2e_median_s, tool_calls_per_run).
        metric: The column ranked; default the GRADE task composite.
        higher_is_better: Rank 1 is the highest mean (default) or the lowest.
        seed: Seed of the resampling (``numpy.random.default_rng``).
        resamples: Bootstrap resamples; default 2,000.
        level: Interval level; default 0.95.

    Returns:
        setup, metric (``metric``, so the mean reads in its unit), mean, rank (observed,
        1 = best), rank_low, rank_high, questions (paired),
        basis (only when there is no interval: fewer than :data:`MIN_RANK_QUESTIONS`
        paired questions, and why), seed, resamples. Empty when no question has the metric
        for every setup.
    """
    setups, _, values = _matrix(per_question, metric)
    schema = {"setup": pl.String, "metric": pl.String, "mean": pl.Float64, "rank": pl.Float64,
              "rank_low": pl.Float64, "rank_high": pl.Float64, "questions": pl.Int64,
              "basis": pl.String, "seed": pl.Int64, "resamples": pl.Int64}
    n = values.shape[0]
    if n == 0 or not setups:
        return pl.DataFrame(schema=schema)
    means = np.array([fmean(values[:, j].tolist()) for j in range(len(setups))])
    observed = _ranks(means[None, :], higher_is_better)[0]
    if n < MIN_RANK_QUESTIONS:
        why = (f"{n} paired question{'' if n == 1 else 's'}: fewer than "
               f"{MIN_RANK_QUESTIONS}, no interval (not a separable ranking)")
        return pl.DataFrame({
            "setup": setups, "metric": [metric] * len(setups), "mean": means.tolist(),
            "rank": observed.tolist(),
            "rank_low": [None] * len(setups), "rank_high": [None] * len(setups),
            "questions": [n] * len(setups), "basis": [why] * len(setups),
            "seed": [seed] * len(setups), "resamples": [resamples] * len(setups)},
            schema=schema).sort("rank", "setup")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(resamples, n))
    boot = np.stack([values[draws, j].mean(axis=1) for j in range(len(setups))], axis=1)
    ranks = _ranks(boot, higher_is_better)
    alpha = (1 - level) / 2
    low, high = np.quantile(ranks, [alpha, 1 - alpha], axis=0, method="inverted_cdf")
    return pl.DataFrame({
        "setup": setups, "metric": [metric] * len(setups), "mean": means.tolist(),
        "rank": observed.tolist(), "rank_low": low.tolist(), "rank_high": high.tolist(),
        "questions": [n] * len(setups),
        "basis": [None] * len(setups), "seed": [seed] * len(setups),
        "resamples": [resamples] * len(setups)},
        schema=schema).drop("basis").sort("rank", "setup")


def questions_needed(per_question: pl.DataFrame, metric: str = "composite", *,
                     alpha: float = 0.05, power: float = 0.8,
                     pairs: Sequence[tuple[str, str]] | None = None,
                     repeats: Sequence[int] | None = None,
                     measured_repeats: int | None = None) -> pl.DataFrame:
    """Paired questions needed to separate each pair of setups (a conditional estimate;
    docs/methodology.md §5 "Planning").

    With ``repeats`` (a grade rate only), questions are weighed against repeats: the
    observed spread of the per-question differences is split into the questions' own
    (between) part and the repeats' (within) part, estimated from each question's slots,
    and the questions needed are given for each R of ``repeats``, with the runs they cost.

    Args:
        per_question: setup, task_id and ``metric`` (with ``repeats``, also the grade's
            ``<grade>_slots``: ``ev.standard.per_question``).
        metric: The compared column; default the GRADE task composite.
        alpha: Two-sided test level; default 0.05.
        power: Wanted power; default 0.8.
        pairs: (baseline, compared) pairs; default every pair, alphabetical.
        repeats: The R to weigh; default None (the spread as observed, one row per pair).
        measured_repeats: The R the slots were measured at; default read off the rates
            (slots / rate).

    Returns:
        baseline, compared, questions (paired now), mean_diff, sd_diff (observed), repeats
        and sd_at_repeats (with ``repeats``), questions_needed (null when the observed
        difference is 0 or within rounding, past 10^12, or there are fewer than 2
        questions), runs (both setups' questions x R, with ``repeats``), verdict (why it
        is null), label (``conditional estimate``), formula, assumptions, repeats_note.

    Raises:
        ValueError: ``repeats`` with a metric that is not a grade rate, or an R below 1.
    """
    # the standard library's normal quantile (Wichura's AS241, within 1e-15 of scipy's
    # norm.ppf): scipy.stats would cost a notebook's kernel 0.35-1.3 s to import
    quantile = NormalDist().inv_cdf
    z = quantile(1 - alpha / 2) + quantile(power)
    slots = metric.removesuffix("_rate") + "_slots"
    if repeats is not None:
        if not metric.endswith("_rate") or slots not in per_question.columns:
            raise ValueError(f"repeats are weighed for a grade rate with its slots "
                             f"({slots!r}), not for {metric!r}")
        if not repeats or any(int(r) != r or r < 1 for r in repeats):
            raise ValueError(f"repeats must be whole numbers of at least 1, not {list(repeats)}")
        measured_repeats = measured_repeats or _measured_repeats(per_question, metric, slots)
    setups = sorted(set(per_question.get_column("setup").to_list()))
    wanted = pairs or [(a, b) for i, a in enumerate(setups) for b in setups[i + 1:]]
    side_a = {"ka": pl.col(slots)} if repeats is not None else {}
    side_b = {"kb": pl.col(slots)} if repeats is not None else {}
    rows = []
    for a, b in wanted:
        both = (per_question.filter(pl.col("setup") == a).select("task_id", x=metric, **side_a)
                .join(per_question.filter(pl.col("setup") == b)
                      .select("task_id", y=metric, **side_b), on="task_id").drop_nulls())
        diffs = (both.get_column("y") - both.get_column("x")).to_list()
        n = len(diffs)
        mean = fmean(diffs) if n else None
        sd = (math.sqrt(math.fsum((d - mean) * (d - mean) for d in diffs) / (n - 1))
              if n >= 2 and mean is not None else None)  # squares as products: exact rounding
        # a difference within the rounding of the figures it is made of (2n ulps of the
        # largest of them) is no difference, never a huge count
        largest = max((abs(v) for v in (*both.get_column("x").to_list(),
                                        *both.get_column("y").to_list())), default=0.0)
        noise = 2 * n * math.ulp(largest)
        size = abs(mean) if sd is not None and mean is not None and abs(mean) > noise else None
        real = size is not None
        base = {"baseline": a, "compared": b, "questions": n, "mean_diff": mean,
                "sd_diff": sd, "label": "conditional estimate",
                "formula": f"n = ((z_(1-{alpha}/2) + z_{power}) x sd / |mean|)^2 = "
                           f"({z:.4f} x sd / |mean|)^2",
                "assumptions": "the observed mean difference and spread are the true ones; "
                               "questions independent; normal approximation"}
        quiet = ("no difference: the observed mean difference is 0 or within rounding"
                 if n >= 2 and not real else
                 f"{n} paired question{'' if n == 1 else 's'}: no spread to plan from"
                 if n < 2 else None)
        if repeats is None:
            needed = _study((z * sd / size) ** 2) if size is not None and sd is not None \
                else None
            rows.append({**base, "repeats": None, "sd_at_repeats": None,
                         "questions_needed": needed, "runs": None,
                         "verdict": quiet or (None if needed is not None or not real else
                                              "more than 10^12 questions: no study "
                                              "separates them"),
                         "repeats_note": "the spread includes the repeats' noise; more "
                                         "repeats per question shrink only that part"})
            continue
        r0 = measured_repeats
        within = (sum(_within(both.get_column(k).to_list(), r0) for k in ("ka", "kb"))
                  if r0 and r0 >= 2 and n else None)
        for r in repeats:
            spread = (None if sd is None or within is None or r0 is None else
                      math.sqrt(max(0.0, sd * sd - within / r0) + within / r))
            needed = (_study((z * spread / size) ** 2)
                      if size is not None and spread is not None else None)
            why = quiet or (f"measured at R = {r0}: the repeats' share of the spread is "
                            "unknown" if within is None and n >= 2 else
                            "more than 10^12 questions: no study separates them"
                            if real and needed is None else None)
            rows.append({**base, "repeats": r, "sd_at_repeats": spread,
                         "questions_needed": needed,
                         "runs": None if needed is None else 2 * needed * r, "verdict": why,
                         "repeats_note": f"between-question variance sd^2 - (w_A + w_B) / "
                                         f"{r0}, plus (w_A + w_B) / R; w = a setup's mean "
                                         "slot variance within a question"})
    return pl.DataFrame(rows, schema={
        "baseline": pl.String, "compared": pl.String, "questions": pl.Int64,
        "mean_diff": pl.Float64, "sd_diff": pl.Float64, "repeats": pl.Int64,
        "sd_at_repeats": pl.Float64, "questions_needed": pl.Int64, "runs": pl.Int64,
        "verdict": pl.String, "label": pl.String, "formula": pl.String,
        "assumptions": pl.String, "repeats_note": pl.String})


def _within(counts: list[int], repeats: int) -> float:
    """A setup's within-question variance of one slot's rate, the mean over its questions of
    k (R - k) / (R (R - 1)) (unbiased for p_q (1 - p_q) from k of R slots)."""
    return math.fsum(k * (repeats - k) for k in counts) / (len(counts) * repeats * (repeats - 1))


def _measured_repeats(per_question: pl.DataFrame, metric: str, slots: str) -> int | None:
    """R as the per-question rates were measured: slots / rate where a rate is above 0."""
    some = per_question.filter(pl.col(metric) > 0).select(slots, metric).head(1)
    return None if not some.height else round(some.item(0, 0) / some.item(0, 1))


def rank_ranges(comparisons: Frame, metric: str = "resolved_rate", subset: str = "all",
                k: int | None = None, order: Sequence[str] | None = None) -> Frame:
    """Each compared setup's range of places from the same Holm-adjusted paired tests the
    headline, the comparisons table and the significance matrix read (docs/methodology.md §5
    "Rank ranges"): from 1 + the setups stated better than it to n - the setups it is stated
    better than. Tied setups (no stated direction) never push each other's range.

    Args:
        comparisons: ``ev.comparisons`` (polars or pandas).
        metric: A tested figure; default the resolved rate.
        subset: ``all`` (default) or ``common``.
        k: For ``pass_hat_k``, the k.
        order: The setups' order among equal ranges (for example by resolved rate, as the
            summary lists them); default by name.

    Returns:
        setup, rank_low, rank_high, better_than (setups it is stated better than),
        worse_than, tested (pairs with a test), the same kind of frame as ``comparisons``,
        best range first.
    """
    frame = to_polars(comparisons)
    rows = frame.filter((pl.col("subset") == subset) & (pl.col("metric") == metric)
                        & (pl.col("k").is_null() if k is None else pl.col("k") == k))
    better = better_side(metric)
    setups = sorted(set(rows.get_column("baseline").to_list())
                    | set(rows.get_column("compared").to_list()))
    wins = {s: 0 for s in setups}
    losses = {s: 0 for s in setups}
    tested = {s: 0 for s in setups}
    for row in rows.iter_rows(named=True):
        a, b = row["baseline"], row["compared"]
        if row["p_holm"] is not None:
            tested[a] += 1
            tested[b] += 1
        if row["direction"] is None or better is None or not row["mean_diff_b_minus_a"]:
            continue
        b_wins = (row["mean_diff_b_minus_a"] > 0) == (better == "higher")
        winner, loser = (b, a) if b_wins else (a, b)
        wins[winner] += 1
        losses[loser] += 1
    n = len(setups)
    out = pl.DataFrame({
        "setup": setups, "rank_low": [1 + losses[s] for s in setups],
        "rank_high": [n - wins[s] for s in setups], "better_than": [wins[s] for s in setups],
        "worse_than": [losses[s] for s in setups], "tested": [tested[s] for s in setups]},
        schema={"setup": pl.String, "rank_low": pl.Int64, "rank_high": pl.Int64,
                "better_than": pl.Int64, "worse_than": pl.Int64, "tested": pl.Int64})
    place = {s: i for i, s in enumerate(order or [])}
    out = out.with_columns(_order=pl.col("setup").replace_strict(
        place, default=len(place), return_dtype=pl.Int64))
    return like(out.sort("rank_low", "rank_high", "_order", "setup").drop("_order"),
                comparisons)


MAX_STUDY_QUESTIONS = 10**12
"""Past this many questions a planned count is no study (and would overflow Int64): null."""


def _study(questions: float) -> int | None:
    """ceil(questions), or None past :data:`MAX_STUDY_QUESTIONS` (or not finite)."""
    return (math.ceil(questions) if math.isfinite(questions)
            and questions <= MAX_STUDY_QUESTIONS else None)


def questions_and_repeats(grades: Frame, *, half_width: float = 0.05,
                          repeats: Sequence[int] = (1, 2, 3, 5, 10), state: str = "resolved",
                          alpha: float = 0.05, subset: str = "all") -> Frame:
    """Questions against repeats for one setup's rate, with its measured icc
    (docs/methodology.md §5 "Planning"): for each setup and each R of ``repeats``, the
    questions Q (and runs Q x R) that give its rate's interval a half-width of
    ``half_width``. A conditional estimate: it assumes the observed rate and icc are the
    truth and the normal approximation. (A difference between two setups:
    :func:`questions_needed` with ``repeats``, paired on questions.)

    With p the observed rate and icc its measured intra-question correlation (0 when R was
    1, said in ``assumptions``; a negative icc taken as 0), one setup's variance over Q
    questions of R repeats is u / Q with u = p (1 - p) (1 + (R - 1) icc) / R, so
    Q = ceil(z² u / h²).

    Args:
        grades: ``ev.grades`` (polars or pandas).
        half_width: The target half-width of one setup's interval; default 0.05.
        repeats: The R to weigh; default 1, 2, 3, 5, 10.
        state: The grade whose rate is planned; default resolved.
        alpha: The interval's level is 1 - alpha; default 0.05 (95%).
        subset: ``all`` (default) or ``common``.

    Returns:
        Per setup and R: questions, runs (null where the rate is 0 or 1, no variance
        observed, or past 10^12 questions, no study), verdict (why they are null), icc,
        design_effect, target, label, assumptions; the same kind of frame as ``grades``.

    Raises:
        ValueError: a half-width that is not positive, or an R below 1.
    """
    if not repeats or any(int(r) != r or r < 1 for r in repeats):
        raise ValueError(f"repeats must be whole numbers of at least 1, not {list(repeats)}")
    if not half_width > 0:
        raise ValueError(f"half_width must be positive, not {half_width}")
    z = NormalDist().inv_cdf(1 - alpha / 2)
    rows = to_polars(grades).filter(pl.col("subset") == subset)
    out = []
    for row in rows.iter_rows(named=True):
        p, icc = row[f"{state}_rate"], row[f"{state}_icc"]
        if p is None:
            continue
        rho = 0.0 if icc is None else max(0.0, icc)
        for r in repeats:
            design = 1 + (r - 1) * rho
            u = p * (1 - p) * design / r
            q = _study(z * z * u / (half_width * half_width)) if u > 0 else None
            out.append({"setup": row["setup"], "repeats": r, "questions": q,
                        "runs": None if q is None else q * r,
                        "verdict": (f"rate {p:g}: no variance observed" if u == 0 else
                                    "more than 10^12 questions: no study" if q is None
                                    else None), "icc": rho,
                        "design_effect": design,
                        "target": f"{1 - alpha:.0%} half-width {half_width:g}",
                        "label": "conditional estimate", "assumptions": (
                            f"the observed {state} rate and icc are the truth (icc 0 where it "
                            "was not measured, negative taken as 0); normal approximation")})
    return like(pl.DataFrame(out, schema={
        "setup": pl.String, "repeats": pl.Int64, "questions": pl.Int64, "runs": pl.Int64,
        "verdict": pl.String, "icc": pl.Float64, "design_effect": pl.Float64, "target": pl.String,
        "label": pl.String, "assumptions": pl.String}), grades)
