"""Claim validation and insight quality (docs/methodology.md §3 "Claim match", "Insight
quality").

The deterministic match is vectorised and set-wise: each distinct (task, field, normalised
text) is scanned once for every synonym at the same time (a substring test on space-padded
``norm`` strings, by Aho-Corasick), then reduced synonym -> term (any) -> alternative (all) ->
claim (any) -> run (any).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import polars as pl

from grade_kit._chunks import in_pieces
from grade_kit.frames import Frame, like, to_polars

DETERMINISTIC = "deterministic"
"""The ``method`` of a decision made by the deterministic matcher."""

ROLE_FIELDS = pl.DataFrame(
    {
        "role": ["insight", "limitation", "forbidden", "forbidden", "forbidden", "forbidden"],
        "field": ["finding", "limitation", "finding", "limitation", "recommendation", "text"],
    }
)
"""docs/methodology.md §3 targets: insights in each key finding; limitations in each limitation;
forbidden claims in each finding, limitation, recommendation and in the full text."""

ROLE = pl.Enum(["insight", "limitation", "forbidden"])
"""A claim match's ``role``."""
FIELD = pl.Enum(["finding", "limitation", "recommendation", "text"])
"""A claim match's ``matched_field``: where in the answer the claim was found."""


FIELD_ORDER = {"finding": 0, "limitation": 1, "recommendation": 2, "text": 3}
"""Where a match is reported from when a claim is stated in several items: the first finding,
then limitation, recommendation, and the full text last."""


class ClaimJudge(Protocol):
    """An optional fallback asked about a claim the deterministic match missed.

    ``name`` is recorded as the deciding method (``judge:<name>``).
    """

    name: str

    def __call__(self, claim: str, targets: Sequence[str]) -> bool:
        """Whether ``claim`` is stated in any of ``targets`` (texts of the claim's role)."""
        ...


def _answered_items(items: pl.DataFrame, answered: pl.DataFrame,
                    tasks: pl.DataFrame) -> pl.DataFrame:
    """(item, task): the index in ``items`` of every item of an answered run whose task has
    claims, and that task's code in ``tasks``, items in their own order."""
    return (items.select("run_id").with_row_index("item")
            .join(answered, on="run_id", how="inner", maintain_order="left")
            .join(tasks, on="task_id", how="inner", maintain_order="left")
            .select("item", "task"))


def _matched_items(claim_terms: pl.DataFrame, claims: pl.DataFrame, items: pl.DataFrame,
                   answered: pl.DataFrame) -> pl.DataFrame:
    """(item, claim_id) for every item of an answered run that states a claim of its run's
    task (``item`` is the row index in ``items``).

    Set-wise: the distinct space-padded synonyms are searched in every padded text by
    Aho-Corasick (``str.extract_many``, overlapping; :func:`_needles_found`), so each text
    is scanned once however many claims its task has. A synonym found in a text marks its
    term present (of that text's task and field); an alternative matches when all its terms
    are present; a claim when any alternative does (docs/methodology.md §3 "Claim match").
    Tasks, fields, synonyms and claims are carried as integer codes, not as strings.
    """
    tasks = claims.select("task_id").unique(maintain_order=True).with_row_index("task")
    coded = claims.select("task_id", "claim_id", "role").with_row_index("claim")
    terms = (claim_terms.join(coded, on=["task_id", "claim_id"])
             .join(ROLE_FIELDS, on="role")
             .join(tasks, on="task_id")
             .with_columns(scope=_scope(pl.col("task"), pl.col("field"))))
    rows = _answered_items(items, answered, tasks)
    if terms.is_empty() or rows.is_empty():
        return pl.DataFrame(schema={"item": pl.UInt32, "claim_id": pl.String})
    rows = rows.with_columns(
        scope=_scope(pl.col("task"), items.get_column("field").gather(rows.get_column("item"))),
        norm=items.get_column("norm").gather(rows.get_column("item")))
    needles = (" " + terms.get_column("synonym").unique(maintain_order=True) + " ").to_list()
    terms = terms.with_columns(needle=(" " + pl.col("synonym") + " ").cast(pl.Enum(needles))
                               .to_physical())
    found = _needles_found(rows, terms, needles)
    found = found.with_columns(rows.get_column("scope").gather(found.get_column("position")))
    alternative = ["claim", "alternative"]
    sizes = terms.group_by(alternative).agg(terms=pl.col("term").n_unique())
    matched = (
        found.join(terms.select("scope", "needle", "claim", "alternative", "term"),
                   on=["scope", "needle"])
        .group_by("position", *alternative).agg(present=pl.col("term").n_unique())
        .join(sizes, on=alternative)
        .filter(pl.col("present") == pl.col("terms"))
        .select("position", "claim").unique()
    )
    return matched.select(
        item=rows.get_column("item").gather(matched.get_column("position")),
        claim_id=coded.get_column("claim_id").gather(matched.get_column("claim")))


def _field_place(field: pl.Expr) -> pl.Expr:
    """A field's place in :data:`FIELD_ORDER`; a field outside it comes last."""
    return field.replace_strict(FIELD_ORDER, default=len(FIELD_ORDER),
                                return_dtype=pl.UInt64)


def _scope(task: pl.Expr, field: pl.Expr | pl.Series) -> pl.Expr:
    """A (task, field) pair as one integer: the task's code and the field's place
    (:func:`_field_place`; a field outside :data:`FIELD_ORDER` gets a place no claim
    targets)."""
    place = _field_place(field if isinstance(field, pl.Expr) else pl.lit(field))
    return task.cast(pl.UInt64) * (len(FIELD_ORDER) + 1) + place


def _needles_found(rows: pl.DataFrame, terms: pl.DataFrame,
                   needles: list[str]) -> pl.DataFrame:
    """(position, needle) for every padded synonym found in the padded ``norm`` of a row of
    ``rows`` (overlapping matches; a synonym found twice in a text gives two rows, which
    the caller's count of distinct terms absorbs): ``position`` is the row's index in
    ``rows``, ``needle`` the synonym's index in ``needles`` (as ``terms`` codes it)."""
    padded = pl.lit(" ") + pl.col("norm") + pl.lit(" ")
    hits = (in_pieces(rows.select("norm").with_row_index("position"))
            .select("position", needle=padded.str.extract_many(needles, overlapping=True))
            .explode("needle").drop_nulls("needle"))
    return hits.select("position", needle=pl.col("needle").cast(pl.Enum(needles))
                       .to_physical().cast(terms.schema["needle"]))


def _claim_matches(
    claims: pl.DataFrame,
    claim_terms: pl.DataFrame,
    runs: pl.DataFrame,
    items: pl.DataFrame,
    claim_judge: ClaimJudge | None = None,
) -> pl.DataFrame:
    answered = runs.filter(pl.col("has_response")).select("run_id", "task_id")
    matched = _matched_items(claim_terms, claims, items, answered)
    hits = items.select("run_id", "field", "position", "text").select(
        pl.all().gather(matched.get_column("item"))).with_columns(
        matched.get_column("claim_id"), matched.get_column("item"))
    found = (
        # (The item's row last: two items given the same field and position, which no
        # flattened frame holds, are taken in their order.)
        hits.sort("run_id", "claim_id", _field_place(pl.col("field")), "position", "item")
        .group_by("run_id", "claim_id", maintain_order=True)
        .agg(matched_field=pl.col("field").first(), matched_text=pl.col("text").first())
        .with_columns(found=pl.lit(True))
    )
    out = (
        answered.join(claims.select("task_id", "claim_id", "role", "calibration", "text"),
                      on="task_id", how="inner")
        .join(found, on=["run_id", "claim_id"], how="left")
        .with_columns(found=pl.col("found").fill_null(False), method=pl.lit(DETERMINISTIC))
    )
    if claim_judge is not None:
        out = _ask_claim_judge(out, items.join(answered, on="run_id", how="inner"),
                               claim_judge)
    # role and field as enums: one byte a row, not a 16-byte string view (3.8M matches at
    # 1M runs; docs/scaling.md)
    return out.select("run_id", "task_id", "claim_id", pl.col("role").cast(ROLE),
                      "calibration", "found", "method",
                      pl.col("matched_field").cast(FIELD), "matched_text")


def _ask_claim_judge(matches: pl.DataFrame, run_items: pl.DataFrame,
                     judge: ClaimJudge) -> pl.DataFrame:
    missed = matches.filter(~pl.col("found"))
    if missed.is_empty():
        return matches
    targets = (run_items.join(ROLE_FIELDS, on="field")
               .filter(pl.col("norm") != "")
               .group_by("run_id", "role").agg(pl.col("text")))
    lookup = {(r, role): texts for r, role, texts in targets.iter_rows()}
    decided = [
        (run_id, claim_id, bool(judge(text, lookup.get((run_id, role), []))))
        for run_id, claim_id, role, text in missed.select(
            "run_id", "claim_id", "role", "text").iter_rows()
    ]
    verdicts = pl.DataFrame(decided, schema={"run_id": pl.String, "claim_id": pl.String,
                                             "judged": pl.Boolean}, orient="row")
    return matches.join(verdicts, on=["run_id", "claim_id"], how="left").with_columns(
        found=pl.coalesce("judged", "found"),
        method=pl.when(pl.col("judged").is_not_null())
        .then(pl.lit(f"judge:{judge.name}")).otherwise(pl.col("method")),
    ).drop("judged")


def claim_matches(
    claims: Frame,
    claim_terms: Frame,
    runs: Frame,
    items: Frame,
    claim_judge: ClaimJudge | None = None,
) -> Frame:
    """Whether each run states each claim of its task (docs/methodology.md §3 "Claim match").

    Without patterns a claim is found when its tokens appear as a contiguous run in one target
    text; with patterns, when some alternative has every term present in one target text, a
    term being present when one of its synonyms appears as a contiguous token run. Only runs
    with a response get rows.

    Args:
        claims: The ``claims`` frame.
        claim_terms: The ``claim_terms`` frame.
        runs: The ``runs`` frame.
        items: The ``items`` frame.
        claim_judge: Optional fallback asked only about claims the deterministic match
            missed; default None (deterministic only).

    Returns:
        run_id, task_id, claim_id, role, calibration, found, method (``deterministic`` or
        ``judge:<name>``, whichever decided), matched_field and matched_text (the first answer
        item that states the claim deterministically; null otherwise).
    """
    result = _claim_matches(to_polars(claims), to_polars(claim_terms), to_polars(runs),
                            to_polars(items), claim_judge)
    return like(result, runs)


def role_share(matches: pl.DataFrame, predicate: pl.Expr, name: str,
                invert: bool = False) -> pl.DataFrame:
    """Per run: the share of its claims selected by ``predicate`` that were found (not found
    with ``invert``), and the methods that decided them ("+"-joined, sorted)."""
    found = ~pl.col("found") if invert else pl.col("found")
    selected = matches.filter(predicate)
    methods = selected.get_column("method").unique()
    if methods.len() == 1:  # one method decided everything (no claim judge): no per-run join
        return selected.group_by("run_id").agg(found.cast(pl.Float64).mean().alias(name)) \
            .with_columns(pl.lit(methods[0], pl.String).alias(f"{name}_method"))
    return selected.group_by("run_id").agg(
        found.cast(pl.Float64).mean().alias(name),
        pl.col("method").unique().sort().str.join("+").alias(f"{name}_method"),
    )


def _insight_scores(matches: pl.DataFrame, runs: pl.DataFrame,
                    tasks: pl.DataFrame) -> pl.DataFrame:
    del runs, tasks  # a run without a response is scored by the one rule in no_response.py
    return role_share(matches, pl.col("role") == "insight", "insight_quality")


def insight_scores(matches: Frame, runs: Frame, tasks: Frame) -> Frame:
    """Per-run insight quality = share of the task's gold insights found (docs/methodology.md §3).

    Tasks without gold insights get no row (null). A run with no response has no matches and
    gets no row here; :func:`grade_kit.scorers.no_response.no_response_zeros` scores it 0.

    Returns:
        run_id, insight_quality, insight_quality_method.
    """
    result = _insight_scores(to_polars(matches), to_polars(runs), to_polars(tasks))
    return like(result, runs)
