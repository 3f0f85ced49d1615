"""The ``bbq`` study: BBQ's published per-category JSONL ("BBQ: A Hand-Built Bias Benchmark for Question
Answering", Parrish et al. 2022) as a three-option choice study with the published bias scores and accuracy,
read from the file the user gives (``counterbench audit bbq --data Age.jsonl``); see ``docs/bbq.md``."""
