"""What the pages read from a loaded model: analyses, inside the layers, attribution, mask filling, tables.
May import: `bert_core.model`, `bert_core.objectives` (and `errors`); never `train`, `runs` or `figures`."""
