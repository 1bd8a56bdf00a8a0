"""One user's training or fine-tuning run, what it reads (settings, status) and what it asks of a shared process
(`sharing`: a slot, a byte ledger; the app's server implements them, bert_core never imports it).
May import: `model`, `objectives`, `inspect`, `train`, `finetune` (and `errors`); never `probe`; only `lesson` sits
above it."""
