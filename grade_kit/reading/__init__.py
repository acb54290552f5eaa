"""The read path: every record that enters grade_kit, from a file, an in-memory list, a
packed store, a scored folder or another tool's log (through :mod:`grade_kit.adapters`),
passes the one validating reader here (docs/methodology.md §6).

- :mod:`~grade_kit.reading.parse`: lines and strict JSON;
- :mod:`~grade_kit.reading.io`: the one reader (a line to a validated record, every reject
  named by file, line and field) and the records files of stores and scored folders;
- :mod:`~grade_kit.reading.records`, :mod:`~grade_kit.reading.task_files`: runs,
  judgements, grades and tasks, with their checks across lines;
- :mod:`~grade_kit.reading.sniff`: what kind of file an input is;
- :mod:`~grade_kit.reading.inputs`: all of an evaluation's inputs as one value;
- :mod:`~grade_kit.reading.packed`: packed stores, written and read back (a scored folder's
  state is the pipeline's: :mod:`grade_kit.pipeline.state`).
"""
