"""A readable BERT encoder with Hugging Face's module names, so checkpoints load key by key.

Every module keeps the name it has in `transformers.models.bert.modeling_bert`
(`embeddings.word_embeddings`, `encoder.layer.N.attention.self.query`, `cls.predictions...`),
which lets `pretrained.py` copy a checkpoint's tensors one key at a time, shapes asserted.

The forward pass can return every intermediate the explorer shows (embedding parts, each layer's
hidden state, each attention probability matrix), so what a page draws is what the model computes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

import torch
import torch.nn as nn
import torch.nn.functional as F

ACTIVATIONS = {
    "gelu": F.gelu,  # exact erf GELU, as BERT's original code
    "relu": F.relu,
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
}


@dataclass
class BertConfig:
    """BERT hyper-parameters, with the field names of Hugging Face's `config.json`."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    initializer_range: float = 0.02
    model_type: str = "bert"  # the family: "bert", "roberta", "distilbert" or "albert"
    architectures: list[str] = field(default_factory=list)
    embedding_size: int | None = None  # ALBERT's E (embeddings are E wide, then projected to H); None = H
    num_hidden_groups: int = 1  # ALBERT: how many distinct layers are shared out over the L layers
    inner_group_num: int = 1  # ALBERT: layers per group

    def __post_init__(self):
        if self.model_type not in FAMILIES:
            raise ValueError(f"model_type {self.model_type!r} is not one of {', '.join(FAMILIES)}")
        if self.model_type == "albert" and (self.num_hidden_groups, self.inner_group_num) != (1, 1):
            raise ValueError(
                f"ALBERT with num_hidden_groups={self.num_hidden_groups}, inner_group_num={self.inner_group_num} "
                "is not supported: only the published layout (1 group of 1 layer, shared by all layers)"
            )
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} is not a multiple of "
                f"num_attention_heads {self.num_attention_heads}"
            )
        if self.hidden_act not in ACTIVATIONS:
            raise ValueError(f"hidden_act {self.hidden_act!r} is not supported")

    @classmethod
    def from_dict(cls, d: dict) -> BertConfig:
        """Build from a `config.json` dict (any supported family), ignoring keys BERT does not use."""
        if d.get("model_type") == "distilbert":
            # DistilBERT's config says dim/n_layers/...; it has no segment table and a fixed LayerNorm eps.
            d = {DISTILBERT_CONFIG_NAMES.get(k, k): v for k, v in d.items()}
            d.update(type_vocab_size=0, layer_norm_eps=1e-12)
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    def to_dict(self) -> dict:
        return asdict(self)

    def to_hf_dict(self) -> dict:
        """The `config.json` transformers expects for this family (DistilBERT's own names)."""
        albert_only = ("embedding_size", "num_hidden_groups", "inner_group_num")
        d = {k: v for k, v in asdict(self).items() if k not in albert_only}
        if self.model_type == "albert":
            d.update(embedding_size=self.E, num_hidden_groups=1, inner_group_num=1)
        if self.model_type == "distilbert":
            back = {ours: theirs for theirs, ours in DISTILBERT_CONFIG_NAMES.items()}
            d = {back.get(k, k): v for k, v in d.items() if k not in ("type_vocab_size", "layer_norm_eps")}
        return d

    @property
    def family(self) -> str:
        return self.model_type

    @property
    def E(self) -> int:
        """Embedding width: ALBERT's embedding_size, otherwise the hidden size."""
        return self.embedding_size or self.hidden_size

    @property
    def has_segments(self) -> bool:
        """DistilBERT dropped the segment (token-type) table."""
        return self.type_vocab_size > 0

    @property
    def position_offset(self) -> int:
        """RoBERTa's first real position is padding_idx + 1 (fairseq's convention); BERT's is 0."""
        return self.pad_token_id + 1 if self.model_type == "roberta" else 0

    @property
    def head_act(self) -> str:
        """The MLM head's activation: RoBERTa's head always uses exact GELU, the others hidden_act."""
        return "gelu" if self.model_type == "roberta" else self.hidden_act


FAMILIES = ("bert", "roberta", "distilbert", "albert")
DISTILBERT_CONFIG_NAMES = {  # DistilBERT's config.json name -> BERT's
    "dim": "hidden_size",
    "n_layers": "num_hidden_layers",
    "n_heads": "num_attention_heads",
    "hidden_dim": "intermediate_size",
    "activation": "hidden_act",
    "dropout": "hidden_dropout_prob",
    "attention_dropout": "attention_probs_dropout_prob",
}


@dataclass
class EncoderTrace:
    """Everything one forward pass computed, as tensors (the explorer's raw material)."""

    word: torch.Tensor  # (B, T, E) token (word-piece) embeddings; E = H except for ALBERT
    position: torch.Tensor  # (B, T, E)
    segment: torch.Tensor  # (B, T, E) token-type embeddings; zeros for DistilBERT, which has no segment table
    sum: torch.Tensor  # (B, T, E) word + position + segment
    hidden_states: list[torch.Tensor]  # L+1 x (B, T, H): LayerNorm(sum) (ALBERT: projected to H), then each layer
    attentions: list[torch.Tensor]  # L x (B, nh, T, T)
    pooled: torch.Tensor | None  # (B, H) or None without a pooler
    normed: torch.Tensor | None = None  # (B, T, E) LayerNorm(sum) before ALBERT's E -> H projection (ALBERT only)


# HF keeps the capital-L `LayerNorm` (and `gamma`/`beta` in old files) from the original
# TensorFlow checkpoint names; we keep `LayerNorm` too so keys match one for one.


class BertEmbeddings(nn.Module):
    """x_t = LayerNorm(E_word[id_t] + E_pos[t] + E_seg[segment_t]).

    The family differences live here, in three places:
    - RoBERTa: positions count real tokens from padding_idx + 1 (see `position_ids`); its one-row segment table.
    - DistilBERT: no segment table (`token_type_embeddings` is None; the trace shows zeros).
    - ALBERT: the three tables are E wide (E < H); `BertEncoder` projects E -> H.
    """

    def __init__(self, config: BertConfig):
        super().__init__()
        E = config.E
        self.offset = config.position_offset
        self.padding_idx = config.pad_token_id
        self.word_embeddings = nn.Embedding(config.vocab_size, E, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, E,
                                                padding_idx=config.pad_token_id if self.offset else None)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, E) if config.has_segments else None
        self.LayerNorm = nn.LayerNorm(E, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def position_ids(self, input_ids):
        """RoBERTa: cumsum of non-pad tokens + padding_idx, pad -> padding_idx (HF/fairseq). Others: 0..T-1.

        Example (padding_idx 1): ids [0, 31, 42, 2, 1, 1] -> positions [2, 3, 4, 5, 1, 1].
        """
        if not self.offset:
            return torch.arange(input_ids.shape[1], device=input_ids.device).expand_as(input_ids)
        real = input_ids.ne(self.padding_idx).long()  # (B, T)
        return torch.cumsum(real, dim=1) * real + self.padding_idx  # (B, T)

    def forward(self, input_ids, token_type_ids, parts: bool = False):
        T = input_ids.shape[1]
        word = self.word_embeddings(input_ids)  # (B, T, E)
        if self.offset:  # RoBERTa: per-row positions, padding skipped
            position = self.position_embeddings(self.position_ids(input_ids))  # (B, T, E)
        else:
            position = self.position_embeddings.weight[:T].unsqueeze(0)  # (1, T, E)
        if self.token_type_embeddings is not None:
            segment = self.token_type_embeddings(token_type_ids)  # (B, T, E)
            total = word + segment + position  # HF's order of addition, for bit-level parity
        else:  # DistilBERT
            segment = None
            total = word + position
        out = self.dropout(self.LayerNorm(total))
        if not parts:
            return out, None
        segment = torch.zeros_like(word) if segment is None else segment
        return out, (word, position.expand_as(word), segment, total)


class BertSelfAttention(nn.Module):
    """softmax(Q K^T / sqrt(d_k) + mask) V, for every head at once."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def _fused_qkv(self):
        """[W_q; W_k; W_v] and [b_q; b_k; b_v], concatenated once and reused while unchanged."""
        parts = (self.query.weight, self.key.weight, self.value.weight, self.query.bias, self.key.bias, self.value.bias)
        if torch.is_grad_enabled() and parts[0].requires_grad:  # training: gradients flow through cat
            return torch.cat(parts[:3]), torch.cat(parts[3:])
        fused = self.__dict__.get("_qkv_fused")  # set by fuse_qkv_storage: the weights are views of it
        if fused is not None and all(p.data_ptr() == f.data_ptr() for p, f in zip(parts, _thirds(*fused))):
            return fused
        # Inference: cache, keyed on each tensor's storage and in-place version counter, so an
        # optimizer step or a weight copy invalidates it.
        key = tuple((p.data_ptr(), p._version) for p in parts)
        cache = self.__dict__.get("_qkv_cache")
        # A cache built under torch.inference_mode holds inference tensors, which autograd refuses
        # (gradient salience differentiates with respect to the input): rebuild it outside that mode.
        stale = cache is not None and torch.is_grad_enabled() and cache[1].is_inference()
        if cache is None or cache[0] != key or stale:
            with torch.no_grad():
                cache = (key, torch.cat(parts[:3]), torch.cat(parts[3:]))
            self.__dict__["_qkv_cache"] = cache
        return cache[1], cache[2]

    def forward(self, x, mask, need_probs: bool = True):
        B, T, H = x.shape
        nh, hs = self.num_attention_heads, self.attention_head_size
        # One matmul for Q, K and V: the same numbers as three Linear calls, fewer passes over x.
        w, b = self._fused_qkv()  # (3H, H), (3H,)
        qkv = F.linear(x, w, b).view(B, T, 3, nh, hs)  # (B, T, 3, nh, hs)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (B, nh, T, hs)
        if not need_probs and not (self.training and self.dropout.p > 0):
            # No maps wanted and no dropout: PyTorch's fused kernel computes the same formula
            # without materialising the (B, nh, T, T) probabilities. (With dropout it falls back to
            # a math path that makes extra passes over the scores; the lines below make fewer.)
            ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, nh, T, hs)
            return ctx.transpose(1, 2).reshape(B, T, H), None
        # (Q / sqrt(d_k)) K^T equals Q K^T / sqrt(d_k); scaling Q touches T*d_k numbers, not T*T.
        scores = torch.matmul(q * (hs**-0.5), k.transpose(-1, -2))  # (B, nh, T, T)
        if mask is not None:
            scores = scores + mask  # (B, 1, 1, T): 0 for real tokens, a huge negative for padding
        probs = scores.softmax(dim=-1)  # (B, nh, T, T), each row sums to 1
        ctx = torch.matmul(self.dropout(probs), v)  # (B, nh, T, hs)
        ctx = ctx.transpose(1, 2).reshape(B, T, H)  # (B, T, H): heads side by side again
        return ctx, (probs if need_probs else None)


def _thirds(w: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The Q, K, V rows of a fused (3H, H) weight and (3H,) bias: (w_q, w_k, w_v, b_q, b_k, b_v)."""
    return (*w.chunk(3), *b.chunk(3))


def fuse_qkv_storage(model: nn.Module) -> None:
    """Store each attention's Q, K, V weights (and biases) in one (3H, H) block, for a read-only model.

    The parameters keep their names and numbers but become views of the block, so inference
    multiplies by the block itself instead of concatenating a second copy of Q, K and V
    (85 MB on bert-base, 300 MB on bert-large). Training or replacing a weight still works:
    `_fused_qkv` then sees the views no longer match and concatenates as before.
    """
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, BertSelfAttention):
                w = torch.cat([m.query.weight, m.key.weight, m.value.weight])  # (3H, H)
                b = torch.cat([m.query.bias, m.key.bias, m.value.bias])  # (3H,)
                for lin, wv, bv in zip((m.query, m.key, m.value), w.chunk(3), b.chunk(3)):
                    lin.weight.data, lin.bias.data = wv, bv
                m.__dict__["_qkv_fused"] = (w, b)
                m.__dict__.pop("_qkv_cache", None)


class BertSelfOutput(nn.Module):
    """Project the heads back and add the residual: LayerNorm(x + W_o ctx) (post-LN)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, ctx, x):
        return self.LayerNorm(self.dropout(self.dense(ctx)) + x)


class BertAttention(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(self, x, mask, need_probs: bool = True, rows=None):
        ctx, probs = self.self(x, mask, need_probs)
        if rows is not None:  # keep only the positions asked for: (N, H)
            ctx, x = ctx[rows], x[rows]
        return self.output(ctx, x), probs


class BertIntermediate(nn.Module):
    """The first half of the feed-forward block: act(W_1 x + b_1), H -> 4H."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = ACTIVATIONS[config.hidden_act]

    def forward(self, x):
        return self.act(self.dense(x))


class BertOutput(nn.Module):
    """The second half of the feed-forward block: LayerNorm(x + W_2 h), 4H -> H.

    (HF's name for the FFN output sublayer; our model-level result is `EncoderTrace`.)
    """

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, h, x):
        return self.LayerNorm(self.dropout(self.dense(h)) + x)


class BertLayer(nn.Module):
    """One transformer block: attention sublayer, then feed-forward sublayer, each post-LN."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, x, mask, need_probs: bool = True, rows=None):
        """(B, T, H) -> (B, T, H), or (N, H) at the positions of the (B, T) bool mask `rows`."""
        a, probs = self.attention(x, mask, need_probs, rows)
        return self.output(self.intermediate(a), a), probs


class BertEncoder(nn.Module):
    """L blocks. ALBERT: an E -> H projection first, and ONE block whose weights every layer reuses."""

    def __init__(self, config: BertConfig):
        super().__init__()
        if config.model_type == "albert":
            self.embedding_hidden_mapping_in = nn.Linear(config.E, config.hidden_size)
            self.shared_layer = BertLayer(config)  # the only layer weights ALBERT has
            # A plain list, not a ModuleList: `layer[l]` works for every l, and the weights are
            # registered (and saved, and counted) once, under `shared_layer`.
            self.layer = [self.shared_layer] * config.num_hidden_layers
        else:
            self.embedding_hidden_mapping_in = None
            self.layer = nn.ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])


class BertPooler(nn.Module):
    """tanh(W h_[CLS] + b): the sentence vector the NSP head reads."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, h):
        return torch.tanh(self.dense(h[:, 0]))


class BertModel(nn.Module):
    """The encoder: embeddings, L layers, optional pooler (HF's `BertModel`)."""

    def __init__(self, config: BertConfig, add_pooling_layer: bool = True):
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, trace: bool = False, rows=None):
        """Return the last hidden state (B, T, H), or an `EncoderTrace` when `trace` is set.

        `rows`, a (B, T) bool mask, asks for the last hidden state at those positions only, (N, H),
        equal to `forward(...)[rows]`: the last layer's keys and values still read every token, but its
        output projection and feed-forward run on N rows, not B*T (training needs only masked rows).
        """
        if rows is not None and trace:
            raise ValueError("rows and trace cannot be combined: a trace holds every position")
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        mask = None
        if attention_mask is not None:
            # 0 where a token may be attended to, the most negative float where it is padding:
            # softmax then gives padding exactly zero weight (HF does the same).
            keep = attention_mask[:, None, None, :].to(torch.bool)  # (B, 1, 1, T)
            dtype = self.embeddings.word_embeddings.weight.dtype
            mask = torch.zeros(keep.shape, dtype=dtype, device=input_ids.device)
            mask = mask.masked_fill(~keep, torch.finfo(dtype).min)
        x, parts = self.embeddings(input_ids, token_type_ids, parts=trace)
        normed = None
        if self.encoder.embedding_hidden_mapping_in is not None:  # ALBERT: E -> H
            normed = x
            x = self.encoder.embedding_hidden_mapping_in(x)  # (B, T, E) -> (B, T, H)
        hidden, attn = [x], []
        last = len(self.encoder.layer) - 1
        for i, block in enumerate(self.encoder.layer):
            x, probs = block(x, mask, need_probs=trace, rows=rows if i == last else None)
            if trace:
                hidden.append(x)
                attn.append(probs)
        if not trace:
            return x if rows is None or last >= 0 else x[rows]
        pooled = self.pooler(x) if self.pooler is not None else None
        return EncoderTrace(*parts, hidden_states=hidden, attentions=attn, pooled=pooled, normed=normed)


class BertPredictionHeadTransform(nn.Module):
    """LayerNorm(act(W h + b)), H -> E (ALBERT's head maps back to its embedding width)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.E)
        self.act = ACTIVATIONS[config.head_act]
        self.LayerNorm = nn.LayerNorm(config.E, eps=config.layer_norm_eps)

    def forward(self, x):
        return self.LayerNorm(self.act(self.dense(x)))


class BertLMPredictionHead(nn.Module):
    """MLM logits = E_word · LayerNorm(act(W h)) + b: the decoder shares the word embeddings."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        self.decoder = nn.Linear(config.E, config.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, h):
        return F.linear(self.transform(h), self.decoder.weight, self.bias)  # (..., V)


class BertPreTrainingHeads(nn.Module):
    """`cls`: the MLM head (`predictions`) and, when present, the NSP head (`seq_relationship`)."""

    def __init__(self, config: BertConfig, nsp: bool = True):
        super().__init__()
        self.predictions = BertLMPredictionHead(config)
        self.seq_relationship = nn.Linear(config.hidden_size, 2) if nsp else None


class BertForPreTraining(nn.Module):
    """BERT with whichever heads a checkpoint has: MLM + NSP, MLM only, or none (encoder only).

    Example: BertForPreTraining(cfg, mlm=True, nsp=False) has the keys of HF's BertForMaskedLM.
    Every family (config.model_type) is this class: RoBERTa, DistilBERT and ALBERT differ only inside
    `BertEmbeddings`, `BertEncoder` and the head's widths; `pretrained.py` maps their key names onto ours.
    Only BERT has an NSP head.
    """

    def __init__(self, config: BertConfig, mlm: bool = True, nsp: bool = True, pooler: bool | None = None):
        super().__init__()
        self.config = config
        nsp = nsp and mlm and config.model_type == "bert"
        pooler = nsp if pooler is None else (pooler or nsp)  # NSP reads the pooler
        self.bert = BertModel(config, add_pooling_layer=pooler)
        self.cls = BertPreTrainingHeads(config, nsp=nsp) if mlm else None
        self.apply(self._init_weights)
        if self.cls is not None:
            self.tie_weights()

    @property
    def family(self) -> str:
        return self.config.model_type

    @property
    def has_mlm(self) -> bool:
        return self.cls is not None

    @property
    def has_nsp(self) -> bool:
        return self.cls is not None and self.cls.seq_relationship is not None

    def tie_weights(self):
        """The MLM decoder reads the word-embedding matrix: one tensor, two uses."""
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight

    def _init_weights(self, module):
        # BERT's initialisation: N(0, 0.02) weights, zero biases, LayerNorm at identity.
        std = self.config.initializer_range
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=std)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
        if isinstance(module, nn.Embedding) and module.padding_idx is not None:
            with torch.no_grad():
                module.weight[module.padding_idx].zero_()
        if isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
        if isinstance(module, BertLMPredictionHead):
            nn.init.zeros_(module.bias)

    def mlm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """(..., H) hidden states -> (..., V) vocabulary logits. Pass only the rows you need."""
        if self.cls is None:
            raise ValueError("this checkpoint has no masked-language-model head")
        return self.cls.predictions(hidden)

    def nsp_logits(self, pooled: torch.Tensor) -> torch.Tensor:
        """(B, H) pooled [CLS] -> (B, 2) logits for (is next, is not next)."""
        if not self.has_nsp:
            raise ValueError("this checkpoint has no next-sentence-prediction head")
        return self.cls.seq_relationship(pooled)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, trace: bool = False, rows=None):
        """Run the encoder; see `BertModel.forward`. Heads are applied by the caller, where needed."""
        return self.bert(input_ids, token_type_ids, attention_mask, trace=trace, rows=rows)

    def num_parameters(self) -> int:
        """Distinct parameters (the tied decoder weight counted once)."""
        return sum(p.numel() for p in self.parameters())


# --- Fine-tuning head: Hugging Face's BertForSequenceClassification ---------------------------


class BertForSequenceClassification(nn.Module):
    """BERT + a linear classifier on the pooled [CLS] vector (HF's keys: `bert.*`, `classifier.*`).

    logits = W_c · dropout(tanh(W_p h_[CLS] + b_p)) + b_c, shape (B, C) for C labels; the pooler is
    BERT's own (`bert.pooler.dense`). `labels[i]` names class i (HF's `id2label`).
    Every family's classifier is this class with `pooled` (and RoBERTa's `head`) changed: see below.
    """

    has_mlm = False  # the pages ask; a classifier has neither pretraining head
    has_nsp = False
    encoder_pooler = True  # BERT and ALBERT pool with the encoder's pooler; RoBERTa and DistilBERT have none

    def __init__(self, config: BertConfig, labels: list[str], classifier_dropout: float | None = None,
                 bert: BertModel | None = None):
        super().__init__()
        self.config = config
        self.labels = list(labels)
        self.bert = bert if bert is not None else BertModel(config, add_pooling_layer=self.encoder_pooler)
        self.classifier_dropout = classifier_dropout  # as config.json says it (None: the family's default)
        self.dropout = nn.Dropout(self.default_dropout(config) if classifier_dropout is None else classifier_dropout)
        self.build_head(config, len(self.labels))
        # HF's initialisation for a new head: N(0, initializer_range) weights, zero bias.
        for name, module in self.named_modules():
            if isinstance(module, nn.Linear) and not name.startswith("bert."):
                nn.init.normal_(module.weight, std=config.initializer_range)
                nn.init.zeros_(module.bias)

    @staticmethod
    def default_dropout(config: BertConfig) -> float:
        """The head's dropout when config.json names none (HF: classifier_dropout or hidden_dropout_prob)."""
        return config.hidden_dropout_prob

    def build_head(self, config: BertConfig, num_labels: int) -> None:
        self.classifier = nn.Linear(config.hidden_size, num_labels)

    def pooling_layer(self) -> nn.Linear:
        """The H -> H layer that makes the vector the classifier reads (trained anew when the base lacks it)."""
        return self.bert.pooler.dense

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, trace: bool = False):
        """Run the encoder; see `BertModel.forward` (the pages explore a classifier's encoder too)."""
        return self.bert(input_ids, token_type_ids, attention_mask, trace=trace)

    def pooled(self, hidden: torch.Tensor) -> torch.Tensor:
        """(B, T, H) last hidden states -> (B, H) pooled [CLS]: the vector the classifier reads."""
        return self.bert.pooler(hidden)

    def head(self, pooled: torch.Tensor) -> torch.Tensor:
        """(B, H) pooled -> (B, C) logits (dropout active only in train mode)."""
        return self.classifier(self.dropout(pooled))

    def logits(self, input_ids, token_type_ids=None, attention_mask=None) -> torch.Tensor:
        """(B, T) ids -> (B, C) class logits (dropout active only in train mode)."""
        return self.head(self.pooled(self.bert(input_ids, token_type_ids, attention_mask)))  # (B, C)

    def mlm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        raise ValueError("this checkpoint is a sequence classifier: it has no masked-language-model head")

    def nsp_logits(self, pooled: torch.Tensor) -> torch.Tensor:
        raise ValueError("this checkpoint is a sequence classifier: it has no next-sentence-prediction head")

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


class AlbertForSequenceClassification(BertForSequenceClassification):
    """ALBERT: BERT's head exactly (`albert.pooler`, dropout, `classifier`); only the dropout's default differs."""

    @staticmethod
    def default_dropout(config: BertConfig) -> float:
        return 0.1  # HF's classifier_dropout_prob default (ALBERT's hidden dropout defaults to 0)


class DistilBertForSequenceClassification(BertForSequenceClassification):
    """DistilBERT has no pooler: its head makes its own from the first token, with ReLU instead of tanh.

    logits = W_c · dropout(ReLU(W_pre h_[CLS] + b_pre)) + b_c   (HF's `pre_classifier`, `classifier`)
    """

    encoder_pooler = False

    @staticmethod
    def default_dropout(config: BertConfig) -> float:
        return 0.2  # HF's seq_classif_dropout default

    def build_head(self, config: BertConfig, num_labels: int) -> None:
        self.pre_classifier = nn.Linear(config.hidden_size, config.hidden_size)
        self.classifier = nn.Linear(config.hidden_size, num_labels)

    def pooling_layer(self) -> nn.Linear:
        return self.pre_classifier

    def pooled(self, hidden: torch.Tensor) -> torch.Tensor:
        return F.relu(self.pre_classifier(hidden[:, 0]))  # (B, H)


class RobertaClassificationHead(nn.Module):
    """RoBERTa's `classifier`: its own pooler `dense` (H -> H, tanh) and `out_proj` (H -> C), HF's names.

    (The model's `pooled` and `head` run them, so the pooled vector can be shown and trained apart.)
    """

    def __init__(self, config: BertConfig, num_labels: int):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.out_proj = nn.Linear(config.hidden_size, num_labels)


class RobertaForSequenceClassification(BertForSequenceClassification):
    """RoBERTa has no pooler in its encoder: the head holds one, with dropout on both sides.

    logits = W_o · dropout(tanh(W_d · dropout(h_<s>) + b_d)) + b_o   (HF's `classifier.dense`, `.out_proj`)
    """

    encoder_pooler = False

    def build_head(self, config: BertConfig, num_labels: int) -> None:
        self.classifier = RobertaClassificationHead(config, num_labels)

    def pooling_layer(self) -> nn.Linear:
        return self.classifier.dense

    def pooled(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.classifier.dense(self.dropout(hidden[:, 0])))  # (B, H)

    def head(self, pooled: torch.Tensor) -> torch.Tensor:
        return self.classifier.out_proj(self.dropout(pooled))  # (B, C)


SEQUENCE_CLASSIFIERS = {"bert": BertForSequenceClassification, "albert": AlbertForSequenceClassification,
                        "distilbert": DistilBertForSequenceClassification,
                        "roberta": RobertaForSequenceClassification}


def param_counts(config: BertConfig, mlm: bool = True, nsp: bool = True, pooler: bool = True) -> dict[str, int]:
    """Parameter count per component, from the config alone (no weights needed).

    Example: bert-base (V=30522, H=768, L=12, I=3072, P=512) -> encoder total 109,482,240.
    ALBERT's tables are E wide and its L layers share one set of weights (counted once);
    DistilBERT has no segment table and no pooler; only BERT has an NSP head.
    """
    V, H, L, F_, P, S, E = (
        config.vocab_size,
        config.hidden_size,
        config.num_hidden_layers,
        config.intermediate_size,
        config.max_position_embeddings,
        config.type_vocab_size,
        config.E,
    )
    albert = config.model_type == "albert"
    nsp = nsp and mlm and config.model_type == "bert"
    distinct = 1 if albert else L  # layers with their own weights
    attn = 4 * (H * H + H) + 2 * H  # Q, K, V, output projection, LayerNorm
    ffn = (H * F_ + F_) + (F_ * H + H) + 2 * H  # F_ = intermediate (feed-forward) size
    counts = {
        "word embeddings": V * E,
        "position embeddings": P * E,
        "segment embeddings": S * E,
        "embedding LayerNorm": 2 * E,
    }
    if albert:
        counts["embedding projection E -> H"] = E * H + H
    counts |= {
        "attention (all layers)": distinct * attn,
        "feed-forward (all layers)": distinct * ffn,
        "pooler": (H * H + H) if (pooler or nsp) else 0,
        "MLM head (transform + bias; decoder tied)": (H * E + E + 2 * E + V) if mlm else 0,
        "NSP head": (2 * H + 2) if nsp else 0,
    }
    counts["total"] = sum(counts.values())
    return counts


def attention_flops(config: BertConfig, T: int) -> int:
    """Multiply-adds of one forward pass at T tokens (for the anatomy page's scale)."""
    H, L, F_ = config.hidden_size, config.num_hidden_layers, config.intermediate_size
    per_layer = 4 * T * H * H + 2 * T * T * H + 2 * T * H * F_
    return L * per_layer


__all__ = [
    "FAMILIES",
    "BertConfig",
    "BertForPreTraining",
    "BertForSequenceClassification",
    "BertModel",
    "SEQUENCE_CLASSIFIERS",
    "EncoderTrace",
    "fuse_qkv_storage",
    "param_counts",
    "attention_flops",
]
