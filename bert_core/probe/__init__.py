"""Probing a frozen model layer by layer: what a linear classifier reads off each layer's word vectors.
May import: `finetune` (the part-of-speech task), `train`, `inspect`, `model`; never `runs`. Nothing in bert_core
imports it: the Probing and Neighbours pages do."""
