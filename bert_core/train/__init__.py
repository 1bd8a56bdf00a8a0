"""Training: the corpora, the Trainer (MLM + NSP), pre-training and fine-tuning loops, their evaluations.
May import: `model`, `objectives`, `inspect` (probes and evaluation read the model as the pages do); never `runs`."""
