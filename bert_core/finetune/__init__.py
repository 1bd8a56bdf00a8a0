"""Fine-tuning and transfer: tasks (sentence classes, word tags, answer spans), their loops, budgets and evaluations.
May import: `train` (the optimizer, schedule and held-out split pre-training uses), `inspect`, `objectives`, `model`;
never `runs` or `probe`."""
