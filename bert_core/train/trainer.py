"""Pretraining in small steps (MLM, next token or replaced tokens): the loop knows nothing of the UI.

The Training page and `python -m bert_core.train.pretrain` both drive `Trainer.step()`; each call
returns the step's metrics, and the caller decides when to call it and how to draw.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import BertCoreError
from ..inspect.analysis import analyze
from ..model.checkpoint import save_pretrained
from ..model.config import BertConfig
from ..model.heads import BertForPreTraining
from ..model.loaded import LoadedModel
from ..model.tokenization import WordPieceTokenizer
from ..objectives.catalog import OBJECTIVES
from ..objectives.masking import KEPT, MASKED, RANDOM, mask_tokens
from ..objectives.rtd import RTD_LAMBDA, electra_mask, new_generator, rtd_forward
from .batches import TextDataset, batch_word_ids, continuation_table, pad_rows

# Model sizes a user may pick for live training: small enough to step several times a second.
PRESETS = {
    "tiny (2 layers, 64 wide)": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=256),
    "small (4 layers, 128 wide)": dict(hidden_size=128, num_hidden_layers=4, num_attention_heads=4,
                                       intermediate_size=512),
    "medium (4 layers, 256 wide)": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                                        intermediate_size=1024),
    # tiny with 4 heads and no dropout: on the farm corpus (train/toy.py) it gets every probe right within a
    # minute; tiny itself (2 heads, dropout 0.1) needed several times as many steps (bench_quick_training.py).
    "quick (2 layers, 64 wide, 4 heads, no dropout)": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                                           intermediate_size=256, hidden_dropout_prob=0.0,
                                                           attention_probs_dropout_prob=0.0),
}
MAX_TRAIN_PARAMS = 12_000_000  # a session's model may not grow past this


@dataclass
class TrainConfig:
    """How to train: optimisation, masking, data and reporting settings."""

    batch_size: int = 32
    seq_len: int = 64  # longest training sequence, [CLS] and [SEP] included
    lr: float = 1e-3
    warmup_steps: int = 100
    max_steps: int = 2000  # the learning rate decays linearly to zero here
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    mlm_probability: float = 0.15
    whole_word: bool = False
    freeze_below: int = 0  # keep the embeddings (so the tied decoder) and encoder layers < N as loaded
    nsp: bool = False  # also train next-sentence prediction on line pairs
    nsp_same_text: float = 0.0  # share of NotNext pairs whose B comes from A's own text (harder than another text)
    nsp_same_genre: float = 0.0  # share whose B comes from another text of A's genre (needs the documents' genres)
    seed: int = 0
    head_lr_scale: float = 1.0  # new heads (cls.*, the pooler) on a pretrained encoder learn this many times faster
    probe_every: int = 50
    top_k: int = 5
    objective: str = "mlm"  # "mlm": BERT's masked words; "clm": GPT's next token, under the causal mask;
    # "rtd": ELECTRA's replaced-token detection (objectives/rtd.py)
    rtd_lambda: float = RTD_LAMBDA  # rtd: the discriminator loss's weight
    random_rows: bool = False  # batches of random lines instead of length-sorted neighbours (batches.TextDataset)


@dataclass
class StepMetrics:
    """What one optimisation step reports."""

    step: int
    loss: float  # the optimised loss: MLM (+ NSP when on)
    mlm_loss: float
    accuracy: float  # top-1 accuracy on the selected (masked/random/kept) positions
    loss_by_outcome: dict[str, float]  # "[MASK]" / "random" / "kept" -> mean loss (nan if none)
    nsp_loss: float | None
    lr: float
    tokens: int  # real (non-pad) tokens in the batch
    tokens_per_sec: float
    seconds: float
    rtd_loss: float | None = None  # rtd: the discriminator's BCE (the step's loss = mlm_loss + lambda * this)
    rtd_accuracy: float | None = None  # rtd: share of real tokens the discriminator labels right (logit > 0)
    replaced_fraction: float | None = None  # rtd: share of real tokens the generator's samples changed


@dataclass
class Probe:
    """The model's view of the probe sentences at one step."""

    step: int
    predictions: dict[str, dict[int, list[tuple[str, float]]]]  # sentence -> [MASK] position -> top-k
    tokens: list[str]  # of the attention probe (the first sentence)
    attentions: np.ndarray | None  # (L, nh, T, T); None in older probes of a session (only the last is drawn)


DEFAULT_PROBES = (
    "the cat sat on the [MASK].",
    "a [MASK] is a large body of water.",
    "she [MASK] the letter to her mother.",
)


def adamw(params: list[torch.nn.Parameter], lr: float, weight_decay: float, head: list[torch.nn.Parameter] = (),
          head_lr_scale: float = 1.0) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices only (not on biases or LayerNorms), as BERT's recipe.

    Parameters in `head` (new heads on a pretrained encoder) learn at `head_lr_scale` x the rate: each
    group's "lr_scale" multiplies the schedule's rate in `Trainer.step`.
    """
    fast = {id(p) for p in head}
    groups = []
    for scale, ps in ((1.0, [p for p in params if id(p) not in fast]),
                      (head_lr_scale, [p for p in params if id(p) in fast])):
        decay = [p for p in ps if p.dim() >= 2]
        no_decay = [p for p in ps if p.dim() < 2]  # biases, LayerNorms
        groups += [g for g in ({"params": decay, "weight_decay": weight_decay, "lr_scale": scale},
                               {"params": no_decay, "weight_decay": 0.0, "lr_scale": scale}) if g["params"]]
    opt = torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.98), eps=1e-6,
                            fused=True)  # one fused kernel: ~4x faster step on CPU
    # The fused kernel updates the weights in place without bumping their version counters (torch
    # 2.13), so the attention's inference cache of [W_q; W_k; W_v] (model/layers.py) would not see the step
    # and a probe or evaluation would run on stale Q/K/V weights. Bump them after every step.
    opt.register_step_post_hook(lambda *_: torch.autograd.graph.increment_version(params))
    return opt


def warmup_linear_lr(step: int, lr: float, warmup_steps: int, max_steps: int) -> float:
    """Linear warm-up to `lr` over `warmup_steps`, then linear decay to 0 at `max_steps`.

    Example: lr=1.0, warmup 2, max 6 -> steps 0..5: 0.5, 1.0, 1.0, 0.75, 0.5, 0.25.
    """
    if step < warmup_steps:
        return lr * (step + 1) / warmup_steps
    return lr * max(0.0, (max_steps - step) / max(1, max_steps - warmup_steps))


def new_model(tokenizer: WordPieceTokenizer, preset: dict, max_position_embeddings: int = 128,
              nsp: bool = False, seed: int = 0, dropout: float = 0.1, causal: bool = False,
              rtd: bool = False) -> BertForPreTraining:
    """A freshly initialised BERT sized by `preset`, for the tokenizer's vocabulary (`causal`: GPT's mask;
    `rtd`: an ELECTRA discriminator, the same encoder under a replaced-token head instead of the MLM head)."""
    if rtd and (causal or nsp):
        raise BertCoreError("an ELECTRA discriminator is bidirectional and has no NSP head")
    preset = {"hidden_dropout_prob": dropout, "attention_probs_dropout_prob": dropout, **preset}  # a preset's wins
    cfg = BertConfig(vocab_size=tokenizer.vocab_size, max_position_embeddings=max_position_embeddings,
                     pad_token_id=tokenizer.pad_token_id, is_decoder=causal,
                     model_type="electra" if rtd else "bert", **preset)
    with torch.random.fork_rng():  # initialise from our seed without moving anyone's global RNG
        torch.manual_seed(seed)
        model = BertForPreTraining(cfg, mlm=True, nsp=nsp)
        if rtd:  # the discriminator starts from the very encoder an mlm (or clm) run of this seed starts from
            encoder = model.bert.state_dict()
            model = BertForPreTraining(cfg, mlm=False, nsp=False, rtd=True)
            model.bert.load_state_dict(encoder)
    if model.num_parameters() > MAX_TRAIN_PARAMS:
        raise BertCoreError(
            f"that model has {model.num_parameters():,} parameters; live training allows {MAX_TRAIN_PARAMS:,}"
        )
    return model


def next_token_labels(ids: torch.Tensor, attn: torch.Tensor) -> torch.Tensor:
    """(B, T) ids and 0/1 mask -> (B, T) targets: position t's label is token t+1 (-100 past the last real one)."""
    labels = torch.full_like(ids, -100)
    labels[:, :-1] = torch.where(attn[:, 1:].bool(), ids[:, 1:], torch.full_like(ids[:, 1:], -100))
    return labels


class Trainer:
    """Training of one model on one corpus, a step at a time: MLM (+ optional NSP), clm or rtd (`cfg.objective`).

    For rtd, `model` is the discriminator (`new_model(..., rtd=True)`) and the Trainer adds the generator that
    shares its embeddings (`self.generator`, objectives/rtd.py); one optimizer steps both.
    """

    def __init__(self, model: BertForPreTraining, tokenizer: WordPieceTokenizer, lines: list[str],
                 cfg: TrainConfig | None = None, probes: tuple[str, ...] = DEFAULT_PROBES,
                 documents: list[list[str]] | None = None, genres: list[str] | None = None):
        self.cfg = cfg = cfg or TrainConfig()
        if cfg.nsp and not model.has_nsp:
            raise BertCoreError("NSP training needs a model with an NSP head")
        if cfg.objective not in OBJECTIVES:
            raise BertCoreError(f"objective must be one of {', '.join(OBJECTIVES)}, not {cfg.objective!r}")
        if (cfg.objective == "clm") != bool(model.config.is_decoder):
            raise BertCoreError("the clm objective needs a causal model (is_decoder) and mlm a bidirectional one")
        if cfg.objective != "mlm" and cfg.nsp:
            raise BertCoreError(f"next-sentence prediction belongs to BERT's objective, not to {cfg.objective}")
        if cfg.whole_word and cfg.objective != "mlm":
            raise BertCoreError(f"whole-word masking belongs to BERT's masked words, not to {cfg.objective}")
        if (cfg.objective == "rtd") != model.has_rtd:
            raise BertCoreError("the rtd objective trains an ELECTRA discriminator (new_model(..., rtd=True)), "
                                "and only it")
        usable = model.config.max_position_embeddings - model.config.position_offset  # RoBERTa: P - 2
        if cfg.seq_len > usable:
            raise BertCoreError(f"seq_len {cfg.seq_len} exceeds the model's {usable} positions")
        if not 0 <= cfg.freeze_below <= model.config.num_hidden_layers:
            raise BertCoreError(f"freeze_below must be 0..{model.config.num_hidden_layers}, not {cfg.freeze_below}")
        if cfg.freeze_below:  # no gradient, so no weight update and no backward work below layer N's weights
            frozen = ("bert.embeddings.", *(f"bert.encoder.layer.{i}." for i in range(cfg.freeze_below)))
            for name, p in model.named_parameters():
                if name.startswith(frozen):
                    p.requires_grad_(False)
        self.model = model
        self.tok = tokenizer
        self.data = TextDataset(lines, tokenizer, cfg.seq_len, documents, cfg.nsp_same_text, genres,
                                cfg.nsp_same_genre, random_rows=cfg.random_rows)
        self._continues = continuation_table(tokenizer) if cfg.whole_word else None  # (V,) "##" pieces
        self.g = torch.Generator().manual_seed(cfg.seed)
        # rtd: the generator, sharing the discriminator's embeddings; its own weights join the optimizer once.
        self.generator = new_generator(model, cfg.seed) if cfg.objective == "rtd" else None
        params = [p for p in model.parameters() if p.requires_grad]
        if self.generator is not None:
            ours = {id(p) for p in model.parameters()}
            params += [p for p in self.generator.parameters() if id(p) not in ours and p.requires_grad]
        head = [p for n, p in model.named_parameters() if n.startswith(("cls.", "bert.pooler."))]
        self.opt = adamw(params, cfg.lr, cfg.weight_decay, head, cfg.head_lr_scale)
        self.step_count = 0
        self.history: list[StepMetrics] = []
        self.probes_text = probes
        self.elapsed = 0.0

    def lr_at(self, step: int) -> float:
        """Linear warmup to `lr` over `warmup_steps`, then linear decay to 0 at `max_steps`."""
        c = self.cfg
        return warmup_linear_lr(step, c.lr, c.warmup_steps, c.max_steps)

    def _set_lr(self) -> float:
        """Put this step's scheduled rate on every parameter group (times the group's lr_scale); return it."""
        lr = self.lr_at(self.step_count)
        for group in self.opt.param_groups:
            group["lr"] = lr * group.get("lr_scale", 1.0)
        return lr

    def _update(self, loss: torch.Tensor) -> None:
        """Backward, clip the gradient norm of everything the optimizer trains, one AdamW step."""
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        if self.cfg.grad_clip:
            torch.nn.utils.clip_grad_norm_([p for g in self.opt.param_groups for p in g["params"]], self.cfg.grad_clip)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)  # between steps the gradients (one model's worth) are freed

    def _finish(self, t0: float, attn: torch.Tensor, **fields) -> StepMetrics:
        """Count the step, time it and record its metrics (`fields`: the objective's losses and accuracy)."""
        self.step_count += 1
        dt = time.perf_counter() - t0
        self.elapsed += dt
        n_tok = int(attn.sum())
        metrics = StepMetrics(step=self.step_count, tokens=n_tok, seconds=dt,
                              tokens_per_sec=n_tok / dt if dt > 0 else float("inf"), **fields)
        self.history.append(metrics)
        return metrics

    def step(self) -> StepMetrics:
        """One optimisation step on a fresh batch with a fresh masking draw."""
        if self.cfg.objective == "clm":
            return self._clm_step()
        if self.cfg.objective == "rtd":
            return self._rtd_step()
        c, t0 = self.cfg, time.perf_counter()
        model, tok = self.model, self.tok
        model.train()
        ids, types, attn, special, nsp_labels = self.data.batch(c.batch_size, self.g, c.nsp)
        # Whole-word masking: the pieces of a word are selected together (Google's wwm release).
        words = batch_word_ids(ids, special, self._continues) if c.whole_word else None
        draw = mask_tokens(ids, special, vocab_size=model.config.vocab_size, mask_token_id=tok.mask_token_id,
                           generator=self.g, mlm_probability=c.mlm_probability, special_ids=tok.all_special_ids,
                           word_ids=words, whole_word=c.whole_word)
        lr = self._set_lr()
        # Dropout draws from torch's global RNG; seed it from our generator so runs repeat.
        with torch.random.fork_rng():
            torch.manual_seed(int(torch.randint(2**62, (), generator=self.g)))
            sel = draw.labels != -100  # (B, T)
            use_nsp = c.nsp and bool((nsp_labels != -100).any())  # rows without a pair carry label -100
            # The losses read only the selected positions (and [CLS] for NSP): the last layer's
            # feed-forward and the vocabulary projection run on those rows alone.
            need = sel.clone()
            need[:, 0] |= use_nsp
            hidden = model(draw.input_ids, types, attn, rows=need)  # (N', H), the rows of `need`
            logits = model.mlm_logits(hidden[sel[need]])  # (N, V)
            target = draw.labels[sel]  # (N,)
            per_token = F.cross_entropy(logits, target, reduction="none")  # (N,)
            mlm_loss = per_token.mean() if per_token.numel() else hidden.sum() * 0.0
            loss = mlm_loss
            nsp_loss = None
            if use_nsp:
                cls_rows = torch.zeros_like(need)
                cls_rows[:, 0] = True
                pooled = model.bert.pooler(hidden[cls_rows[need]].unsqueeze(1))  # reads (B, 1, H)[:, 0]
                nsp_loss = F.cross_entropy(model.nsp_logits(pooled), nsp_labels, ignore_index=-100)
                loss = loss + nsp_loss
            self._update(loss)
        with torch.no_grad():
            outcome = draw.outcome[sel]
            acc = (logits.argmax(-1) == target).float().mean().item() if target.numel() else float("nan")
            by = {}
            for code, name in ((MASKED, "[MASK]"), (RANDOM, "random"), (KEPT, "kept")):
                m = outcome == code
                by[name] = per_token[m].mean().item() if m.any() else float("nan")
        return self._finish(t0, attn, loss=loss.item(), mlm_loss=mlm_loss.item(), accuracy=acc,
                            loss_by_outcome=by, nsp_loss=None if nsp_loss is None else nsp_loss.item(), lr=lr)

    def _clm_step(self) -> StepMetrics:
        """One step of GPT's objective: every real token after the first is predicted from those before it.

        loss = mean over t of -log p(x_{t+1} | x_1..x_t), read at position t under the causal mask,
        through the same (tied) output projection the MLM head uses. No masking draw: every token teaches.
        """
        c, t0 = self.cfg, time.perf_counter()
        model = self.model
        model.train()
        ids, types, attn, _, _ = self.data.batch(c.batch_size, self.g, False)
        lr = self._set_lr()
        with torch.random.fork_rng():
            torch.manual_seed(int(torch.randint(2**62, (), generator=self.g)))
            target = next_token_labels(ids, attn)  # (B, T): x_{t+1}, or -100 where there is none
            sel = target != -100
            hidden = model(ids, types, attn)  # (B, T, H)
            logits = model.mlm_logits(hidden[sel])  # (N, V)
            loss = F.cross_entropy(logits, target[sel])
            self._update(loss)
        with torch.no_grad():
            acc = (logits.argmax(-1) == target[sel]).float().mean().item()
        return self._finish(t0, attn, loss=loss.item(), mlm_loss=loss.item(), accuracy=acc, loss_by_outcome={},
                            nsp_loss=None, lr=lr)

    def _rtd_step(self) -> StepMetrics:
        """One step of ELECTRA's objective (objectives/rtd.py): generator MLM + lambda * discriminator BCE."""
        c, t0 = self.cfg, time.perf_counter()
        model, gen, tok = self.model, self.generator, self.tok
        model.train()
        gen.train()
        ids, types, attn, special, _ = self.data.batch(c.batch_size, self.g, False)
        draw = electra_mask(ids, special, model.config.vocab_size, tok.mask_token_id, self.g, c.mlm_probability,
                            tok.all_special_ids)
        lr = self._set_lr()
        with torch.random.fork_rng():
            torch.manual_seed(int(torch.randint(2**62, (), generator=self.g)))
            out = rtd_forward(gen, model, ids, types, attn, draw, self.g, c.rtd_lambda)
            self._update(out.loss)
        with torch.no_grad():
            n = out.target.numel()
            acc = (out.gen_logits.argmax(-1) == out.target).float().mean().item() if n else float("nan")
            right = ((out.disc_logits > 0) == out.replaced)[out.real]
            rtd_acc = right.float().mean().item()
            replaced = out.replaced[out.real].float().mean().item()
        return self._finish(t0, attn, loss=out.loss.item(), mlm_loss=out.gen_loss.item(), accuracy=acc,
                            loss_by_outcome={}, nsp_loss=None, lr=lr, rtd_loss=out.disc_loss.item(),
                            rtd_accuracy=rtd_acc, replaced_fraction=replaced)

    def state_dict(self) -> dict:
        """Everything a resumed run needs to continue exactly: weights, optimizer, RNG, data queue."""
        state = {"model": self.model.state_dict(), "opt": self.opt.state_dict(), "g": self.g.get_state(),
                 "step": self.step_count, "elapsed": self.elapsed, "queue": self.data.queue}
        if self.generator is not None:
            state["generator"] = self.generator.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        """Continue from `state_dict()`: the next step is the one an uninterrupted run would take."""
        self.model.load_state_dict(state["model"])
        if self.model.has_mlm:
            self.model.tie_weights()
        if self.generator is not None:
            self.generator.load_state_dict(state["generator"])
            self.generator.tie_weights()
        self.opt.load_state_dict(state["opt"])
        self.g.set_state(state["g"])
        self.step_count = int(state["step"])
        self.elapsed = float(state["elapsed"])
        self.data.queue = [[tuple(r) for r in b] for b in state["queue"]]

    def run(self, steps: int | None = None, seconds: float | None = None) -> list[StepMetrics]:
        """Step until `steps` are done or `seconds` have passed (whichever comes first)."""
        out, t0 = [], time.perf_counter()
        while (steps is None or len(out) < steps) and (seconds is None or time.perf_counter() - t0 < seconds):
            out.append(self.step())
            if steps is None and seconds is None:
                break
        return out

    def as_loaded(self, name: str = "session model") -> LoadedModel:
        """The model in training, wrapped like any loaded model (shares its weights)."""
        return LoadedModel(self.model, self.tok, name, "session")

    def guesser(self) -> LoadedModel:
        """The model that fills a [MASK]: this one, or for rtd its generator (the discriminator has no MLM head)."""
        return self.as_loaded() if self.generator is None else LoadedModel(self.generator, self.tok, "generator",
                                                                             "session")

    def probe(self) -> Probe:
        """Top-k predictions for each probe sentence and the first one's attention, at this step.

        rtd: the guesses are the generator's (the discriminator has no MLM head), the attention the discriminator's.
        clm: the guess for a [MASK] is the next-token prediction from the words left of it.
        """
        m = self.as_loaded()
        guesser = m if self.generator is None else self.guesser()
        modules = [self.model] + ([self.generator] if self.generator is not None else [])
        was_training = self.model.training
        for mod in modules:
            mod.eval()
        try:
            # Only what a probe shows: predictions, and the first sentence's attention maps.
            traces = [analyze(guesser, s, top_k=self.cfg.top_k, embeddings=False, hidden_states=False,
                              attentions=i == 0 and guesser is m) for i, s in enumerate(self.probes_text)]
            first = traces[0] if guesser is m else analyze(m, self.probes_text[0], embeddings=False,
                                                           hidden_states=False, attentions=True)
            preds = {s: t.predictions for s, t in zip(self.probes_text, traces)}  # clm: from the left (analyze)
        finally:
            for mod in modules:
                mod.train(was_training)
        return Probe(
            step=self.step_count,
            predictions=preds,
            tokens=first.tokens,
            attentions=first.attentions,
        )

    def save(self, out_dir) -> None:
        """A checkpoint `bert_core.load_model(out_dir)` loads: safetensors, config, tokenizer."""
        save_pretrained(self.model, self.tok, out_dir)


def evaluate_mlm(model: BertForPreTraining, tokenizer: WordPieceTokenizer, lines: list[str], *, seed: int = 0,
                 batch_size: int = 64, seq_len: int = 128, mlm_probability: float = 0.15) -> dict[str, float]:
    """Held-out MLM loss and top-1/top-5 accuracy on masked positions, one seeded draw per line.

    Every line is scored once (in order, not sampled), with the same 80/10/10 draw for a seed: the draw is made
    batch by batch in the lines' order; the forward passes then run on lines of similar length (a line's output
    does not depend on its batch, and padding mixed lengths to a batch's longest line would multiply the work).
    """
    return mlm_metrics(mlm_line_scores(model, tokenizer, lines, seed=seed, batch_size=batch_size, seq_len=seq_len,
                                       mlm_probability=mlm_probability))


def mlm_metrics(scores: list[tuple[int, float, int, int]]) -> dict[str, float]:
    """`evaluate_mlm`'s numbers from `mlm_line_scores`' rows: sums over the lines, divided by the masked tokens."""
    n = sum(s[0] for s in scores)
    total_loss, top1, top5 = (sum(s[k] for s in scores) for k in (1, 2, 3))
    return {"lines": len(scores), "masked_tokens": n, "loss": total_loss / max(n, 1),
            "perplexity": math.exp(total_loss / max(n, 1)), "top1": top1 / max(n, 1), "top5": top5 / max(n, 1)}


@torch.no_grad()
def mlm_line_scores(model: BertForPreTraining, tokenizer: WordPieceTokenizer, lines: list[str], *, seed: int = 0,
                    batch_size: int = 64, seq_len: int = 128, mlm_probability: float = 0.15,
                    only: list[int] | None = None) -> list[tuple[int, float, int, int]]:
    """Each non-empty line's (masked tokens, summed loss, top-1 hits, top-5 hits) under `evaluate_mlm`'s draw.

    `only`: run the model on just these rows (indices into the result), the others get (masked tokens, 0.0, 0, 0).
    The draw is still made for every line, since a line's mask depends on the generator's state after the lines
    before it; so a sampled row scores exactly as it does in the full evaluation.
    """
    model.eval()
    g = torch.Generator().manual_seed(seed)
    data = TextDataset(lines, tokenizer, seq_len)
    cls, sep, pad = tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id
    drawn: list[tuple[torch.Tensor, torch.Tensor]] = []  # each line's (n,) masked input ids and (n,) labels
    for start in range(0, len(data.lines), batch_size):
        ids, attn = pad_rows([[cls, *x, sep] for x in data.lines[start:start + batch_size]], pad)  # (B, T)
        special = ((ids == cls) | (ids == sep) | (attn == 0)).long()
        draw = mask_tokens(ids, special, vocab_size=model.config.vocab_size, mask_token_id=tokenizer.mask_token_id,
                           generator=g, mlm_probability=mlm_probability, special_ids=tokenizer.all_special_ids)
        for r, n in enumerate(attn.sum(1).tolist()):
            drawn.append((draw.input_ids[r, :n], draw.labels[r, :n]))
    scores = [(int((y != -100).sum()), 0.0, 0, 0) for _, y in drawn]
    order = sorted(range(len(drawn)) if only is None else set(only), key=lambda i: len(drawn[i][0]))
    for start in range(0, len(order), batch_size):
        batch = order[start:start + batch_size]
        ids, attn = pad_rows([drawn[i][0].tolist() for i in batch], pad)  # (B, T)
        labels = torch.full_like(ids, -100)
        for r, i in enumerate(batch):
            labels[r, : len(drawn[i][1])] = drawn[i][1]
        sel = labels != -100
        if not sel.any():
            continue
        hidden = model(ids, None, attn)
        logits = model.mlm_logits(hidden[sel])  # (M, V): the masked positions, row by row
        target = labels[sel]
        row = sel.nonzero()[:, 0]  # (M,) the batch row of each masked position
        best = logits.topk(5, dim=-1).indices
        per_row = torch.zeros(len(batch), 3, dtype=torch.float64)
        per_row.index_add_(0, row, torch.stack([F.cross_entropy(logits, target, reduction="none").double(),
                                                (best[:, 0] == target).double(),
                                                (best == target[:, None]).any(-1).double()], 1))
        for r, i in enumerate(batch):
            loss, t1, t5 = per_row[r].tolist()
            scores[i] = (scores[i][0], loss, int(t1), int(t5))
    return scores

