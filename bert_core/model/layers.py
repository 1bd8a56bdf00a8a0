"""BERT's building blocks with Hugging Face's module names: embeddings, self-attention, feed-forward, layer, pooler.

Every module keeps the name it has in `transformers.models.bert.modeling_bert`
(`embeddings.word_embeddings`, `encoder.layer.N.attention.self.query`, ...), which lets `checkpoint.py`
copy a checkpoint's tensors one key at a time, shapes asserted. `families.py` holds the lines in which
RoBERTa and ALBERT differ; `encoder.py` assembles a config's family into `BertModel`.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import ACTIVATIONS, BertConfig

# HF keeps the capital-L `LayerNorm` (and `gamma`/`beta` in old files) from the original
# TensorFlow checkpoint names; we keep `LayerNorm` too so keys match one for one.


class BertEmbeddings(nn.Module):
    """x_t = LayerNorm(E_word[id_t] + E_pos[t] + E_seg[segment_t]).

    E is the hidden size H (ALBERT's tables are E < H wide; its encoder projects E -> H). A config with no
    segment table (DistilBERT's, type_vocab_size 0) leaves E_seg out; the trace then shows zeros.
    """

    def __init__(self, config: BertConfig, position_padding_idx: int | None = None):
        super().__init__()
        E = config.E
        self.padding_idx = config.pad_token_id
        self.word_embeddings = nn.Embedding(config.vocab_size, E, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, E, padding_idx=position_padding_idx)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, E) if config.has_segments else None
        self.LayerNorm = nn.LayerNorm(E, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def position_ids(self, input_ids):
        """(B, T) position of each token: 0..T-1 in every row."""
        return torch.arange(input_ids.shape[1], device=input_ids.device).expand_as(input_ids)

    def positions(self, input_ids):
        """E_pos for each token: the first T rows of the table, (1, T, E), shared by every row of the batch."""
        return self.position_embeddings.weight[: input_ids.shape[1]].unsqueeze(0)

    def forward(self, input_ids, token_type_ids, parts: bool = False, word=None):
        """LayerNorm(word + position + segment), (B, T, E); with `parts`, also (word, position, segment, sum).

        `word` (B, T, E), when given, replaces the table's rows for `input_ids` (HF's `inputs_embeds`):
        the position and segment terms are still the family's own for those ids (RoBERTa's offset positions).
        """
        word = self.word_embeddings(input_ids) if word is None else word  # (B, T, E)
        position = self.positions(input_ids)  # (1 or B, T, E)
        if self.token_type_embeddings is not None:
            segment = self.token_type_embeddings(token_type_ids)  # (B, T, E)
            total = word + segment + position  # HF's order of addition, for bit-level parity
        else:  # no segment table (DistilBERT)
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

    def forward(self, x, mask, need_probs: bool = True, head_mask=None):
        """(B, T, H) -> the heads' context vectors side by side, (B, T, H), and the probabilities (or None).

        `head_mask` (B or 1, nh): each head's context is multiplied by it before the heads are concatenated,
        so 0 knocks a head out (what transformers v4's `head_mask` did to the probabilities: the same numbers,
        since the context is probs @ V) and 1 leaves it bit for bit as it was.
        """
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
            if head_mask is not None:
                ctx = ctx * head_mask[:, :, None, None]  # (B, nh, T, hs): a knocked-out head's context is 0
            return ctx.transpose(1, 2).reshape(B, T, H), None
        # (Q / sqrt(d_k)) K^T equals Q K^T / sqrt(d_k); scaling Q touches T*d_k numbers, not T*T.
        scores = torch.matmul(q * (hs**-0.5), k.transpose(-1, -2))  # (B, nh, T, T)
        if mask is not None:
            scores = scores + mask  # (B, 1, 1, T): 0 for real tokens, a huge negative for padding
        probs = scores.softmax(dim=-1)  # (B, nh, T, T), each row sums to 1
        ctx = torch.matmul(self.dropout(probs), v)  # (B, nh, T, hs)
        if head_mask is not None:
            ctx = ctx * head_mask[:, :, None, None]  # (B, nh, T, hs): a knocked-out head's context is 0
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

    def forward(self, x, mask, need_probs: bool = True, rows=None, head_mask=None):
        ctx, probs = self.self(x, mask, need_probs, head_mask)
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

    def forward(self, x, mask, need_probs: bool = True, rows=None, head_mask=None):
        """(B, T, H) -> (B, T, H), or (N, H) at the positions of the (B, T) bool mask `rows`.

        `head_mask` (B or 1, nh): 0 zeroes that head's context before `attention.output.dense`.
        """
        a, probs = self.attention(x, mask, need_probs, rows, head_mask)
        return self.output(self.intermediate(a), a), probs


class BertEncoder(nn.Module):
    """L blocks, each with its own weights (`layer.0` ... `layer.{L-1}`)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])

    def project_in(self, x):
        """The embeddings as the first layer reads them: (x, None) here (ALBERT projects E -> H)."""
        return x, None


class BertPooler(nn.Module):
    """tanh(W h_[CLS] + b): the sentence vector the NSP head reads."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, h):
        return torch.tanh(self.dense(h[:, 0]))
