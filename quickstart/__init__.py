"""The quickstart: the whole prompted -> fine-tuned experiment as one resumable run, and the one layer that
composes every stage (``actune quickstart`` parses its command line and calls :func:`pipeline.run_quickstart`).

config.py            QuickstartConfig, the presets, the hardware kind
layout.py            where each file of a run goes
round_inputs.py      what a method's round trains on: stores, base model, epochs
estimate.py          the ETA: rates measured per kind of hardware
state.py             the resume state: the config a run holds, the stages done
context.py           what each stage is handed: config, layout, log, sections filled for the run
stage.py             one named, resumable step
sources.py           the stages before round 1: tasks, imports, gold paths
rounds.py            each round's stages (collection, then fine-tuning): where new kinds of rounds plug in
bootstrap_rounds.py  round 1's and later rounds' bootstrap stages
fine_tune.py         a round's export and training stages
train_child.py       training in a child process
evaluation.py        each method's eval, and eval episodes on a bootstrap round's server
cards.py             the eval table in the tuned models' cards
formats.py           formats (the ReAct paper's Figure 3): each step format's export, training and eval
formats_report.py    the report's Figure 3 table
report.py            report.md, report.json, scores.png
pipeline.py          plans the stages, runs (or resumes) them with the ETA
"""
