"""The pipeline: one evaluation from inputs to results
(:func:`~grade_kit.pipeline.evaluation.evaluate`), its scored form
(:class:`~grade_kit.pipeline.scored.Evaluation`), a packed store's map and reduce steps
(:mod:`~grade_kit.pipeline.partitioned`), the typed results built from the standard's frames
(:mod:`~grade_kit.pipeline.results`), the files ``grade-kit score`` writes
(:mod:`~grade_kit.pipeline.files`), the state a scored folder is reopened from
(:mod:`~grade_kit.pipeline.state`) and one evaluation against an earlier one
(:mod:`~grade_kit.pipeline.diff`). It sits above the scorers, the standard and the judges and
below the report and the command line (the import contract in pyproject.toml states the
layers)."""
