"""The headline of an evaluation (docs/methodology.md §5 "The headline"): who is best on the
primary outcome, by how much over the next, and which setups are statistically tied, read
from the same Holm-adjusted paired tests as every comparison, on the same subset."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

ALPHA = 0.05
"""The level of every statement of significance the page makes (Holm-adjusted p < ALPHA)."""
PRIMARY_METRIC = "resolved_rate"
"""The primary outcome: the resolved rate, compared on all paired questions."""


@dataclass(frozen=True)
class Headline:
    """The headline's figures.

    Attributes:
        order: The ranked, compared setups, best resolved rate over N first (ties by name).
        rates: Each one's resolved rate over N.
        tiers: The statistically tied groups, in order: each led by the best setup not yet
            in a group, with every later setup its Holm-adjusted test does not separate
            from the leader (p_holm >= :data:`ALPHA`; an untested pair, over no shared
            question, is never called tied).
        best, runner_up: The first of ``order``, and the next one the best was tested
            against (else the second; None where there are fewer).
        margin: best - runner_up, the paired difference in resolved rate over the questions
            both ran, with its interval (the test inverted at its Holm level,
            ``margin_level``), the questions, and p_holm.
        p_vs_best: Each setup's Holm-adjusted p against the best (None: untested, or it is
            the best).
    """

    order: list[str] = field(default_factory=list)
    rates: dict[str, float | None] = field(default_factory=dict)
    tiers: list[list[str]] = field(default_factory=list)
    best: str | None = None
    runner_up: str | None = None
    margin: float | None = None
    margin_ci: tuple[float, float] | None = None
    margin_level: float | None = None
    questions: int | None = None
    p_holm: float | None = None
    p_vs_best: dict[str, float | None] = field(default_factory=dict)

    @property
    def significant(self) -> bool | None:
        """The best's lead over the runner-up is significant (None: not tested)."""
        return None if self.p_holm is None else self.p_holm < ALPHA


def paired_resolved(figures: pl.DataFrame, a: str, b: str
                    ) -> tuple[float | None, tuple[float, float] | None, int | None,
                               float | None, float | None]:
    """a - b in resolved rate on all paired questions, from the figures of the pair (B
    against A, alphabetical, so the sign is turned when needed; the standard's figures
    frame): the mean difference, its interval, the questions, p_holm and the interval's
    level; Nones where the pair was not compared."""
    pair = figures.filter((pl.col("subset") == "all") & (
        ((pl.col("baseline") == a) & (pl.col("compared") == b))
        | ((pl.col("baseline") == b) & (pl.col("compared") == a))))
    if not pair.height:
        return None, None, None, None, None
    primary = pair.filter(pl.col("metric") == PRIMARY_METRIC)
    if not primary.height or primary.item(0, "mean_diff_b_minus_a") is None:
        return None, None, pair.item(0, "questions"), None, None
    figure = primary.row(0, named=True)
    sign = 1.0 if figure["compared"] == a else -1.0
    low, high = figure["ci_low"], figure["ci_high"]
    interval = (None if low is None else (low, high) if sign > 0 else (-high, -low))
    return (sign * figure["mean_diff_b_minus_a"], interval, figure["n_questions"],
            figure["p_holm"], figure["ci_level"])


def headline(grades: pl.DataFrame, figures: pl.DataFrame, compared: list[str]) -> Headline:
    """The headline over the setups ``compared`` (the ranked setups that were compared pair
    by pair; docs/methodology.md §5 "The headline"), from the standard's frames: each
    setup's resolved rate over N (``grades``, subset ``all``) and the Holm-adjusted paired
    tests of every pair (``figures``, subset ``all``).

    Order by resolved rate over N (ties by name); tiers by walking that order: the first
    setup not yet in a tier leads one, joined by every later setup not yet in a tier whose
    Holm-adjusted p against the leader is at least :data:`ALPHA` (tested: an untested pair
    shares no question and is never called tied).
    """
    on_all = dict(grades.filter(pl.col("subset") == "all")
                  .select("setup", "resolved_rate").iter_rows())
    rates = {s: on_all[s] for s in compared if s in on_all}
    def by_rate(setup: str) -> tuple[float, str]:
        rate = rates[setup]
        return (-rate if rate is not None else 1.0, setup)

    order = sorted(rates, key=by_rate)
    p_holm: dict[frozenset[str], float | None] = {
        frozenset((a, b)): p for a, b, p in figures.filter(
            (pl.col("subset") == "all") & (pl.col("metric") == PRIMARY_METRIC))
        .select("baseline", "compared", "p_holm").iter_rows()}
    tiers: list[list[str]] = []
    left = list(order)
    while left:
        leader, rest = left[0], left[1:]
        tier = [leader] + [s for s in rest
                           if (p := p_holm.get(frozenset((leader, s)))) is not None
                           and p >= ALPHA]
        tiers.append(tier)
        left = [s for s in left if s not in tier]
    if len(order) < 2:
        return Headline(order=order, rates=rates, tiers=tiers,
                        best=order[0] if order else None)
    best = order[0]
    # the next setup the best was tested against (setups over other questions are not)
    runner_up = next((s for s in order[1:]
                      if p_holm.get(frozenset((best, s))) is not None), order[1])
    margin, interval, questions, p, level = paired_resolved(figures, best, runner_up)
    return Headline(order=order, rates=rates, tiers=tiers, best=best, runner_up=runner_up,
                    margin=margin, margin_ci=interval, margin_level=level,
                    questions=questions, p_holm=p,
                    p_vs_best={s: (None if s == best else p_holm.get(frozenset((best, s))))
                               for s in order})
