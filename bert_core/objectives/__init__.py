"""Pre-training objectives' pieces shared by the pages and the trainer: BERT's 15% / 80-10-10 masking.
May import: `bert_core.model` (and `errors`); never `inspect`, `train`, `runs` or `figures`."""
