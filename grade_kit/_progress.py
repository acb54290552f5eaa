"""Progress bars: one kind for every long job (:func:`progress_bar`), and the stage progress
of a long evaluation (one bar with a step a stage, naming the stage that runs)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class DisplayLine:
    """A file a tqdm bar writes to in a Jupyter kernel: one text output of the cell (an
    IPython display with an id), replaced by the bar's latest line on every flush. Each bar
    has its own, so bars running at once (one per setup) are one line each, updated in
    place, with no cursor movement (``ESC[A``, which a notebook prints as it is); the saved
    notebook and its HTML export keep each bar's last line as text."""

    def __init__(self) -> None:
        from IPython.display import display

        self.line = ""
        self._pending = ""
        self.handle = display({"text/plain": ""}, raw=True,  # type: ignore[no-untyped-call]
                              display_id=True)

    def write(self, text: str) -> int:
        self._pending += _ESCAPE.sub("", text)
        lines = [part for part in re.split(r"[\r\n]", self._pending) if part.strip()]
        if lines:
            self.line = lines[-1].rstrip()
        self._pending = self._pending.rsplit("\r", 1)[-1].rsplit("\n", 1)[-1]
        return len(text)

    def flush(self) -> None:
        if self.handle is not None:
            self.handle.update({"text/plain": self.line}, raw=True)


def progress_bar(total: int, desc: str, unit: str, **options: Any) -> Any:
    """A tqdm bar of text, never a widget: on stderr in a terminal (bars running at once
    stacked by tqdm's positions); in a Jupyter kernel one output line of its own
    (:class:`DisplayLine`), updated in place, so a saved notebook opened again, or its HTML
    export, shows each finished bar as one line of text (a widget bar shows "Error
    displaying widget: model not found" once its kernel is gone). ``options`` go to
    tqdm."""
    from tqdm.std import tqdm

    in_kernel = "ipykernel" in sys.modules and type(sys.stdout).__name__ == "OutStream"
    if in_kernel:
        return tqdm(total=total, desc=desc, unit=unit, file=DisplayLine(), position=0,
                    ncols=options.pop("ncols", 100), **options)
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, **options)


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
