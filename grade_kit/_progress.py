"""Progress bars: one kind for every long job (:func:`progress_bar`), and the stage progress
of a long evaluation (one bar with a step a stage, naming the stage that runs)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any


def progress_bar(total: int, desc: str, unit: str, **options: Any) -> Any:
    """A tqdm bar of text, never a widget: on stderr in a terminal; in a Jupyter kernel on
    stdout, where the notebook keeps its last state as text, so a saved notebook opened again
    shows the finished bar (a widget bar shows "Error displaying widget: model not found" once
    its kernel is gone). ``options`` go to tqdm."""
    from tqdm.std import tqdm

    in_kernel = "ipykernel" in sys.modules and type(sys.stdout).__name__ == "OutStream"
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stdout if in_kernel else
                sys.stderr, **options)


Step = Callable[[str], None]
"""``step(name)``: the stage before is done, ``name`` runs now."""


@contextmanager
def stage_progress(stages: Sequence[str], enabled: bool,
                   desc: str = "evaluate") -> Iterator[Step]:
    """A progress bar over ``stages``, run in this order.

    Args:
        stages: The names of the stages, in the order they run.
        enabled: Show the bar (:func:`progress_bar`); when False the step
            does nothing and nothing is shown.
        desc: The bar's label; default ``evaluate``.

    Yields:
        The step: call it with each stage's name as the stage starts. A name out of order
        is a programming error (``ValueError``), so the bar never counts wrongly. Leaving
        the block after the last stage marks it done.
    """
    position = 0

    def advance(name: str) -> None:
        nonlocal position
        if position >= len(stages) or stages[position] != name:
            raise ValueError(f"stage {name!r} out of order; the stages are {list(stages)}")
        position += 1

    if not enabled:
        yield advance
        return
    bar = progress_bar(len(stages), desc, "stage",
                       bar_format="{desc}: {n_fmt}/{total_fmt} stages |{bar}| {elapsed}{postfix}")

    def step(name: str) -> None:
        advance(name)
        bar.n = position - 1
        bar.set_postfix_str(name)  # refreshes the bar

    try:
        yield step
        if position == len(stages):
            bar.n = position
            bar.set_postfix_str("done")
    finally:
        bar.close()
