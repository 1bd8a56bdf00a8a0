"""Users' runs on a shared server: one user's training or fine-tuning run, the slot cap, the memory ledger.
May import: `model`, `objectives`, `inspect`, `train` (and `errors`); it is the top layer of bert_core."""
