"""What a person sees of an evaluation: charts (:mod:`~grade_kit.presentation.charts`), the
run explorer (:mod:`~grade_kit.presentation.explorer`) and the offline HTML report
(:mod:`~grade_kit.presentation.report`), over the tables of :mod:`grade_kit.views`. Nothing
here computes a figure: every number comes from the scorers and the standard."""
