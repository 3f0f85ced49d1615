"""counterbench in Inspect AI, both ways (the optional extra ``counterbench[inspect]``).

* :mod:`~counterbench.inspect_ext.tasks` — any counterbench study as an Inspect task, registered
  through Inspect's ``inspect_ai`` entry point: ``inspect eval counterbench/STUDY -T preset=quick
  --model openai/gpt-4o-mini`` for a registered study (or ``counterbench/study -T study=my.yaml``). Each prompt is a
  sample whose metadata holds the prompt's design columns; the scorer parses answers with
  counterbench's parser.
* :mod:`~counterbench.inspect_ext.importer` — ``counterbench import --inspect-log PATH`` loads such
  an eval log into a store, so ``analyze``, ``report``, ``view`` and ``check`` work on it.

Nothing here is imported by counterbench unless one of these is used.
"""
