"""Users' runs on a shared server: one user's training or fine-tuning run, the slot cap, the memory ledger.
May import: `model`, `objectives`, `inspect`, `train`, `finetune` (and `errors`); never `probe`; only `lesson` sits
above it."""
