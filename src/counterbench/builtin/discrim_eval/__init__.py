"""The ``discrim_eval`` study: DiscrimEval's published decision prompts ("Evaluating and Mitigating
Discrimination in Language Model Decisions", Tamkin et al. 2023) as a crossed yes/no study, read from the file
the user gives (``counterbench audit discrim_eval --data explicit.jsonl``); see ``docs/discrim-eval.md``."""
