"""The model: config and the four families, the encoder, its heads, checkpoint loading and saving, tokenization.
May import: nothing of bert_core but `bert_core.errors` (it is the bottom layer; everything else reads it)."""
