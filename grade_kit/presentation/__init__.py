"""What a person sees: tables (:mod:`~grade_kit.presentation.tables`), charts
(:mod:`~grade_kit.presentation.charts`), the run explorer
(:mod:`~grade_kit.presentation.explorer`) and the written outputs and HTML report
(:mod:`~grade_kit.presentation.report`). Nothing here computes a figure: every number
comes from the scorers and the standard."""
