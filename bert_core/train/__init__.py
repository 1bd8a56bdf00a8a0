"""Pre-training: the corpora, batches, the Trainer (MLM, causal LM, ELECTRA), pre-training, the toy corpus, evaluation.
May import: `model`, `objectives`, `inspect` (probes and evaluation read the model as the pages do); never
`finetune`, `probe` or `runs`."""
