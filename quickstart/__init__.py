"""The quickstart: the whole prompted -> fine-tuned experiment as one resumable run, and the one layer that
composes every stage (``actune quickstart`` parses its command line and calls :func:`pipeline.run_quickstart`).

Each stage is a named, resumable step (``stage.py``); ``pipeline.py`` plans the stages and runs (or resumes)
them with the ETA. The stages before round 1 are in ``sources.py``, each round's in ``rounds.py`` (where new
kinds of rounds plug in), each method's eval in ``evaluation.py`` and the report in ``report.py``.

The rules in full: docs/modules.md, actune.quickstart.
"""
