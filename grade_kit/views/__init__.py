"""Results as a person reads them, in plain values: the formatted tables every page shares
(:mod:`~grade_kit.views.tables`) and the Markdown scorecard rendered from them
(:mod:`~grade_kit.views.markdown`). Nothing here computes a figure; the pipeline hands these
views out (``ev.summary``, scorecard.md) and the report draws on them."""
