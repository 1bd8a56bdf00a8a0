"""The BERT family as BERT plus the lines that differ (HF's modeling_roberta, modeling_distilbert, modeling_albert).

Where each family differs from BERT, and nowhere else:
- RoBERTa: positions count real tokens from padding_idx + 1 (`RobertaEmbeddings` here); config.py's
  `position_offset` and `head_act` (its MLM head is always exact GELU); checkpoint.py's `roberta.*` / `lm_head.*`.
- DistilBERT: the same modules; its config has no segment table (type_vocab_size 0) and its own field names
  (config.py), its checkpoints no pooler and `distilbert.transformer.*` names (checkpoint.py).
- ALBERT: E-wide tables projected to H, and one layer shared by all L (`AlbertEncoder` here); config.py's
  `embedding_size`; checkpoint.py's `albert.*` names with one layer group.
The heads differ too (`classifiers.py`: each family's classifier; only BERT has an NSP head).
"""

from __future__ import annotations

import torch
import torch.nn as nn

from .config import BertConfig
from .layers import BertEmbeddings, BertEncoder, BertLayer


class RobertaEmbeddings(BertEmbeddings):
    """RoBERTa: a token's position counts the real tokens up to it, from padding_idx + 1 (fairseq's convention).

    Example (padding_idx 1): ids [0, 31, 42, 2, 1, 1] -> positions [2, 3, 4, 5, 1, 1]; padding sits at row
    padding_idx of the table, which is kept at zero.
    """

    def __init__(self, config: BertConfig):
        super().__init__(config, position_padding_idx=config.pad_token_id)

    def position_ids(self, input_ids):
        real = input_ids.ne(self.padding_idx).long()  # (B, T)
        return torch.cumsum(real, dim=1) * real + self.padding_idx  # (B, T)

    def positions(self, input_ids):
        return self.position_embeddings(self.position_ids(input_ids))  # (B, T, E): per row, padding skipped


class AlbertEncoder(BertEncoder):
    """ALBERT: an E -> H projection of the embeddings, then ONE layer whose weights all L layers reuse."""

    def __init__(self, config: BertConfig):
        nn.Module.__init__(self)
        self.embedding_hidden_mapping_in = nn.Linear(config.E, config.hidden_size)
        self.shared_layer = BertLayer(config)  # the only layer weights ALBERT has
        # A plain list, not a ModuleList: `layer[l]` works for every l, and the weights are
        # registered (and saved, and counted) once, under `shared_layer`.
        self.layer = [self.shared_layer] * config.num_hidden_layers

    def project_in(self, x):
        return self.embedding_hidden_mapping_in(x), x  # (B, T, E) -> (B, T, H); and the E-wide input


class ElectraEncoder(BertEncoder):
    """ELECTRA: BERT's L layers, read through an E -> H projection when the embeddings are narrower (E != H)."""

    def __init__(self, config: BertConfig):
        super().__init__(config)
        # HF's ElectraModel.embeddings_project; absent when E == H (ELECTRA-base/large discriminators).
        self.embeddings_project = nn.Linear(config.E, config.hidden_size) if config.E != config.hidden_size else None

    def project_in(self, x):
        if self.embeddings_project is None:
            return x, None
        return self.embeddings_project(x), x  # (B, T, E) -> (B, T, H); and the E-wide input


# Each family's (embeddings, encoder) classes; everything else is BERT's.
FAMILY_MODULES: dict[str, tuple[type[BertEmbeddings], type[BertEncoder]]] = {
    "bert": (BertEmbeddings, BertEncoder),
    "roberta": (RobertaEmbeddings, BertEncoder),
    "distilbert": (BertEmbeddings, BertEncoder),
    "albert": (BertEmbeddings, AlbertEncoder),
    "electra": (BertEmbeddings, ElectraEncoder),
}
