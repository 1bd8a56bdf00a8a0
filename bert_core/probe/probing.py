"""Probe every layer: what a linear classifier can read off each layer's frozen word vectors (Tenney et al. 2019).

For each layer l = 0 (the embeddings' output) .. L, a multinomial logistic regression reads each word's
vector h^l_w (its first piece's hidden state; features standardised with the training words' mean and
spread) and predicts a label:

    p(y = c | h) = softmax(W h + b)_c,   minimise  -1/N sum_w log p(y_w | h_w) + l2/2 |W|^2   (L-BFGS)

Held-out accuracy by layer says where the information is easiest to read. Two floors keep it honest:
the same architecture with random weights (whatever a linear probe finds there comes from the word's
identity and position, not from pretraining), and, for part of speech, Hewitt & Liang's (2019) control
task: each word type gets a random tag (drawn from the tag distribution) and the probe on the real model
is asked to learn that; a probe that does well on the control task is memorising words, and the
difference (selectivity) is what the vectors themselves tell.

Two tasks: part of speech (Brown, 12 universal tags, `finetune.tagging`) and word sense (WordNet: the same word
in example sentences of its different senses, `scripts/build_senses.py`; the probe picks among the word's
own senses, the softmax restricted to them).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import gzip
import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

from ..errors import BertCoreError
from ..finetune.tagging import UNIVERSAL_TAGS, builtin_pos_task
from ..inspect import stored
from ..inspect.neighbours import word_vectors
from ..model.loaded import LoadedModel, Progress
from ..model.untrained import init_weights

SENSES_FILE = Path(__file__).resolve().parent.parent / "data" / "wordnet_senses.tsv.gz"  # scripts/build_senses.py
POS, SENSE = "part of speech", "word sense"
TASKS = (POS, SENSE)
PROBE_L2 = 1e-2  # on standardised features: a small, fixed penalty (no tuning on the held-out words)
PROBE_STEPS = 100  # L-BFGS iterations (converged well before on these sizes)
POS_SIZES = (100, 300, 1_000)  # training sentences of the part-of-speech probe (~20 words each)
POS_VALID = 300  # held-out sentences (Brown sentences neither bundled model read in pretraining)
PROBE_MAX_BYTES = 256 * 2**20  # the word vectors one probing run holds (float16, every layer): bert-base fits 300 + 300


@dataclass(frozen=True)
class ProbeTask:
    """Words to label in pre-split sentences: (sentence, word index, label) for training and held-out words.

    `group` restricts the answer: word w may only be given the labels c with label_group[c] == group[w]
    (word sense: a word's own senses). None: any label.
    """

    name: str
    labels: tuple[str, ...]
    sentences: tuple[tuple[str, ...], ...]
    train: np.ndarray  # (N_train, 3) int: sentence, word, label
    valid: np.ndarray  # (N_valid, 3)
    label_group: np.ndarray | None = None  # (C,) group of each label
    groups: tuple[str, ...] = ()  # name of each group (word sense: the word)
    description: str = ""

    def group_of(self, items: np.ndarray) -> np.ndarray | None:
        return None if self.label_group is None else self.label_group[items[:, 2]]


def _items(sent_offset: int, tag_rows) -> np.ndarray:
    return np.array([(sent_offset + s, w, t) for s, tags in enumerate(tag_rows) for w, t in enumerate(tags)],
                    dtype=np.int64).reshape(-1, 3)


@functools.lru_cache(maxsize=4)
def pos_probe_task(n_train: int = POS_SIZES[1], n_valid: int = POS_VALID) -> ProbeTask:
    """Every word of the first `n_train` training and `n_valid` validation sentences of the Brown tagging task."""
    t = builtin_pos_task()
    sentences = t.train_words[:n_train] + t.valid_words[:n_valid]
    train = _items(0, t.train_tags[:n_train])
    valid = _items(len(t.train_words[:n_train]), t.valid_tags[:n_valid])
    return ProbeTask(POS, UNIVERSAL_TAGS, sentences, train, valid,
                     description=f"Part of speech of every word of {n_train:,} Brown training sentences "
                                 f"({len(train):,} words), tested on {n_valid:,} held-out sentences "
                                 f"({len(valid):,} words) that neither bundled model read in pretraining.")


@functools.lru_cache(maxsize=1)
def sense_rows() -> tuple[tuple[str, str, str, str, int, tuple[str, ...], str], ...]:
    """The built-in sense examples: (split, part of speech, word, synset, word index, words, definition)."""
    rows = []
    with gzip.open(SENSES_FILE, "rt", encoding="utf-8") as f:
        for line in f:
            split, pos, word, synset, ix, words, definition = line.rstrip("\n").split("\t")
            rows.append((split, pos, word, synset, int(ix), tuple(words.split(" ")), definition))
    return tuple(rows)


@functools.lru_cache(maxsize=1)
def sense_probe_task() -> ProbeTask:
    """WordNet word sense: which of its senses a word has in an example sentence, among that word's senses."""
    rows = sense_rows()
    senses = list(dict.fromkeys((pos, word, synset) for _, pos, word, synset, *_ in rows))
    label_ix = {s: i for i, s in enumerate(senses)}
    groups = list(dict.fromkeys((pos, word) for pos, word, _ in senses))
    group_ix = {g: i for i, g in enumerate(groups)}
    defs = {(pos, word, synset): d for _, pos, word, synset, _, _, d in rows}
    labels = tuple(f"{word} ({pos}): {defs[(pos, word, synset)]}" for pos, word, synset in senses)
    items = {"train": [], "validation": []}
    for s, (split, pos, word, synset, ix, _, _) in enumerate(rows):
        items[split].append((s, ix, label_ix[(pos, word, synset)]))
    n_tr, n_va = len(items["train"]), len(items["validation"])
    return ProbeTask(SENSE, labels, tuple(r[5] for r in rows), np.array(items["train"], dtype=np.int64),
                     np.array(items["validation"], dtype=np.int64),
                     np.array([group_ix[(pos, word)] for pos, word, _ in senses], dtype=np.int64),
                     tuple(f"{w} ({p})" for p, w in groups),
                     description=f"{len(groups):,} WordNet words with at least two senses that each have two or "
                                 f"more example sentences containing the word: {len(senses):,} senses, "
                                 f"{n_tr:,} training and {n_va:,} held-out sentences (the last example of each "
                                 "sense). The probe picks among the word's own senses.")


def probe_task(name: str, n_train: int = POS_SIZES[1]) -> ProbeTask:
    if name == POS:
        return pos_probe_task(n_train)
    if name == SENSE:
        return sense_probe_task()
    raise BertCoreError(f"the probing task must be one of {', '.join(TASKS)}, not {name!r}")


# --- baselines ------------------------------------------------------------------------------------


def majority_predictions(task: ProbeTask) -> np.ndarray:
    """(N_valid,) the most frequent training label (in the word's group; ties: the lower label id)."""
    C = len(task.labels)
    counts = np.bincount(task.train[:, 2], minlength=C)
    if task.label_group is None:
        return np.full(len(task.valid), int(np.argmax(counts)), dtype=np.int64)
    best = {}
    for g in np.unique(task.label_group):
        members = np.flatnonzero(task.label_group == g)
        best[int(g)] = int(members[np.argmax(counts[members])])
    return np.array([best[int(g)] for g in task.group_of(task.valid)], dtype=np.int64)


def control_labels(task: ProbeTask, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Hewitt & Liang's control task: every word type (lower-cased) gets one random label, drawn from the training
    label distribution; returns the (N_train,) and (N_valid,) control labels. Same type, same label everywhere."""
    rng = np.random.default_rng(seed)
    C = len(task.labels)
    dist = np.bincount(task.train[:, 2], minlength=C) / len(task.train)

    def words(items):
        return [task.sentences[s][w].lower() for s, w, _ in items]

    types = sorted(set(words(task.train)) | set(words(task.valid)))
    label = dict(zip(types, rng.choice(C, size=len(types), p=dist)))
    return (np.array([label[w] for w in words(task.train)], dtype=np.int64),
            np.array([label[w] for w in words(task.valid)], dtype=np.int64))


# --- the probe ------------------------------------------------------------------------------------


@dataclass
class LinearProbe:
    """A fitted multinomial logistic regression on standardised features."""

    mean: np.ndarray  # (H,)
    scale: np.ndarray  # (H,)
    weight: np.ndarray  # (H, C)
    bias: np.ndarray  # (C,)
    loss: float
    steps: int

    def logits(self, x: np.ndarray) -> np.ndarray:
        return ((np.asarray(x, dtype=np.float32) - self.mean) / self.scale) @ self.weight + self.bias

    def predict(self, x: np.ndarray, allowed: np.ndarray | None = None) -> np.ndarray:
        """(N,) argmax label; `allowed` (N, C) bool keeps only those labels in the race."""
        z = self.logits(x)
        if allowed is not None:
            z = np.where(allowed, z, -np.inf)
        return z.argmax(1)


def fit_probe(x: np.ndarray, y: np.ndarray, n_classes: int, allowed: np.ndarray | None = None,
              l2: float = PROBE_L2, steps: int = PROBE_STEPS, start: LinearProbe | None = None) -> LinearProbe:
    """Minimise mean cross-entropy + l2/2 |W|^2 over (W, b) by L-BFGS (torch, float32, strong Wolfe line search).

    `allowed` (N, C) bool restricts each example's softmax to its allowed labels (word sense: its word's senses);
    only those logits are computed (a word has a handful of senses, the task a thousand).
    Convex: the same data gives the same probe up to the solver's tolerance, from any `start` (a probe of the same
    shape whose weights and bias the solver starts from; None: zeros).
    """
    x = np.asarray(x, dtype=np.float32)
    mean, scale = x.mean(0), x.std(0) + 1e-6
    xs = torch.from_numpy((x - mean) / scale)  # (N, H)
    y = np.ascontiguousarray(y, dtype=np.int64)
    if allowed is None:
        cand = None
        target = torch.from_numpy(y)
    else:
        allowed = np.asarray(allowed, dtype=bool)
        K = int(allowed.sum(1).max())
        cand_np = np.zeros((len(y), K), dtype=np.int64)  # (N, K) each example's allowed labels, padded
        pad_np = np.ones((len(y), K), dtype=bool)
        for i, row in enumerate(allowed):
            c = np.flatnonzero(row)
            cand_np[i, : len(c)], pad_np[i, : len(c)] = c, False
        if not (cand_np == y[:, None]).any(1).all():
            raise BertCoreError("an example's label is not among its allowed labels")
        ex, slot = np.nonzero(~pad_np)  # the P (example, allowed label) pairs: only their logits are computed
        cand = (torch.from_numpy(ex), torch.from_numpy(slot), torch.from_numpy(cand_np[ex, slot]))
        target = torch.from_numpy((cand_np == y[:, None]).argmax(1))
        dense_shape = pad_np.shape
    N = len(y)
    w = torch.zeros(x.shape[1], n_classes) if start is None else torch.tensor(start.weight)
    b = torch.zeros(n_classes) if start is None else torch.tensor(start.bias)
    onehot = torch.zeros(N, n_classes if cand is None else dense_shape[1])
    onehot[torch.arange(N), target] = 1.0  # (N, C) or (N, K): the label's column
    opt = torch.optim.LBFGS([w, b], lr=1.0, max_iter=steps, history_size=20, line_search_fn="strong_wolfe",
                            tolerance_grad=1e-6, tolerance_change=1e-9)
    last = [0.0]

    @torch.no_grad()
    def closure():
        # The loss and its gradient written out (no autograd graph: a third of the operations, which matters
        # when each is a few milliseconds): with P = softmax(z), dL/dz = (P - Y) / N, dL/dW = Xs^T dL/dz + l2 W.
        if cand is None:
            z = torch.addmm(b, xs, w)  # (N, C)
        else:
            ex, slot, c = cand
            zp = (xs[ex] * w.T[c]).sum(-1) + b[c]  # (P,) the allowed labels' logits only
            z = torch.full(dense_shape, float("-inf")).index_put_((ex, slot), zp)  # (N, K), -inf where padded
        logp = torch.log_softmax(z, 1)
        loss = -logp[torch.arange(N), target].mean() + 0.5 * l2 * (w * w).sum()
        g = logp.exp_().sub_(onehot).div_(N)  # (N, C) or (N, K): dL/dz
        if cand is None:
            w.grad = torch.addmm(w, xs.T, g, beta=l2)
            b.grad = g.sum(0)
        else:
            gp = g[ex, slot]  # (P,)
            w.grad = (l2 * w).T.index_add(0, c, gp[:, None] * xs[ex]).T.contiguous()
            b.grad = torch.zeros_like(b).index_add_(0, c, gp)
        last[0] = float(loss)
        return loss

    opt.step(closure)
    n = opt.state[opt._params[0]].get("n_iter", 0)
    return LinearProbe(mean, scale, w.detach().numpy(), b.detach().numpy(), last[0], int(n))


@contextlib.contextmanager
def one_thread():
    """Run torch in this thread on one intra-op thread, then restore its count.

    Why: a probing run is many small operations (a probe's are a few milliseconds: 6,000 x 384 by 384 x 12), and
    split over threads each waits for the slowest (docs/benchmarks.md, "Neighbours and Probing", has the timings).
    One thread also fixes the order of every sum, so the page and a notebook elsewhere compute the same vectors and
    fit the same probes whatever their thread settings. torch's count is per thread
    (server/threads.py): other sessions' runs keep theirs.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _allowed(task: ProbeTask, items: np.ndarray) -> np.ndarray | None:
    g = task.group_of(items)
    return None if g is None else g[:, None] == task.label_group[None, :]


# --- the random-weights floor ----------------------------------------------------------------------


@torch.no_grad()
def untrained_encoder(m: LoadedModel, seed: int = 0) -> nn.Module:
    """`m`'s encoder (`BertModel`) with every weight drawn afresh as transformers initialises (`_init_weights`):
    Linear and Embedding ~ N(0, initializer_range^2), biases 0, LayerNorm 1 and 0, padding rows 0.

    `bert_core.untrained_copy(m, seed)` does the same to the whole model; only the encoder is needed here (no
    MLM head to copy, less memory).
    """
    enc = copy.deepcopy(m.model.bert)
    std = m.config.initializer_range
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        enc.apply(lambda mod: init_weights(mod, std))  # the same rule as untrained_copy's
    return enc.eval()


# --- every layer -----------------------------------------------------------------------------------

ROWS = ("pretrained", "random weights", "control task")


@dataclass
class LayerProbes:
    """Held-out accuracy of a probe at every layer, for the model, its random-weights twin and the control task."""

    task: str
    labels: tuple[str, ...]
    accuracy: dict[str, np.ndarray]  # ROWS -> (L+1,) held-out accuracy (control task: POS only)
    train_accuracy: dict[str, np.ndarray]
    majority: float  # held-out accuracy of the most frequent (training) label (in the word's group)
    valid_true: np.ndarray  # (N_valid,) int16 labels
    valid_pred: dict[str, np.ndarray]  # ROWS -> (L+1, N_valid) int16 held-out predictions
    control_true: np.ndarray | None  # (N_valid,) the control task's labels
    n_train: int
    n_valid: int
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def selectivity(self) -> np.ndarray | None:
        """(L+1,) pretrained accuracy - control-task accuracy (Hewitt & Liang)."""
        c = self.accuracy.get("control task")
        return None if c is None else self.accuracy["pretrained"] - c


def feature_bytes(m: LoadedModel, task: ProbeTask) -> int:
    """Bytes of the float16 word vectors (every layer) a probing run of `task` on `m` holds at once."""
    words = len(task.train) + len(task.valid)
    return words * (m.config.num_hidden_layers + 1) * m.config.hidden_size * 2


def probe_layers(m: LoadedModel, task_name: str = POS, n_train: int = POS_SIZES[1], seed: int = 0,
                 control: bool = True, progress: Progress | None = None, store: bool = True) -> LayerProbes:
    """Fit a probe on every layer of `m` and of its random-weights twin (and the control task); held-out accuracy.

    Features: one forward pass per model with every hidden state (`word_vectors`); then (L+1) L-BFGS fits each;
    all on one intra-op thread (`one_thread`: faster on shared cores, and the same sums on any machine).
    `store`: read the run from disk when this model made it on this machine with these settings, and keep it
    there once made (`bert_core.inspect.stored`): the app's page and a notebook then show the same run.
    `seconds` is the time of the run that made it.
    """
    task = probe_task(task_name, n_train)
    need = feature_bytes(m, task)
    if need > PROBE_MAX_BYTES:
        raise BertCoreError(f"these sentences' vectors at every layer of {m.name} take {need / 2**20:.0f} MB, more "
                            f"than the {PROBE_MAX_BYTES / 2**20:.0f} MB a probing run may hold: pick fewer training "
                            "sentences")
    if not store:
        with one_thread():
            return _probe_layers(m, task, seed, control, progress)

    def run():
        with one_thread():
            return _arrays(_probe_layers(m, task, seed, control, progress))

    a, _ = stored.stored("probes", m, [task_digest(task), seed, control], run)
    return _from_arrays(a, task)


def task_digest(task: ProbeTask) -> str:
    """A hash of everything a probing run reads from `task`: its sentences, items, labels and groups."""
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((task.name, task.labels, task.sentences, task.groups)).encode())
    for a in (task.train, task.valid, task.label_group):
        h.update(b"-" if a is None else np.ascontiguousarray(a, dtype=np.int64).tobytes())
    return h.hexdigest()


def _arrays(r: LayerProbes) -> dict[str, np.ndarray]:
    """A run as named arrays (for `stored`): dict fields as "<field>/<row>"."""
    out = {"majority": np.array(r.majority), "valid_true": r.valid_true, "n": np.array([r.n_train, r.n_valid]),
           "seconds": np.array(json.dumps(r.seconds))}
    for name in ("accuracy", "train_accuracy", "valid_pred"):
        out.update({f"{name}/{row}": v for row, v in getattr(r, name).items()})
    if r.control_true is not None:
        out["control_true"] = r.control_true
    return out


def _from_arrays(a: dict[str, np.ndarray], task: ProbeTask) -> LayerProbes:
    def rows(name):
        return {row: a[f"{name}/{row}"] for row in ROWS if f"{name}/{row}" in a}

    return LayerProbes(task.name, task.labels, rows("accuracy"), rows("train_accuracy"), float(a["majority"]),
                       a["valid_true"], rows("valid_pred"), a.get("control_true"), int(a["n"][0]), int(a["n"][1]),
                       json.loads(str(a["seconds"])))


def _probe_layers(m: LoadedModel, task: ProbeTask, seed: int, control: bool, progress: Progress | None
                  ) -> LayerProbes:
    report = progress or (lambda what, frac: None)
    secs: dict[str, float] = {}
    C = len(task.labels)
    used = np.unique(np.concatenate([task.train[:, 0], task.valid[:, 0]]))
    remap = np.full(len(task.sentences), -1)
    remap[used] = np.arange(len(used))
    sentences = [task.sentences[i] for i in used]
    at_train, at_valid = _allowed(task, task.train), _allowed(task, task.valid)
    ctrl_train, ctrl_valid = control_labels(task, seed) if control and task.label_group is None else (None, None)

    def rows_of(wv, items):
        """Feature rows of `items` in the word-vector table (sentence, word) -> row."""
        where = {(int(s), int(w)): i for i, (s, w) in enumerate(zip(wv.sentence, wv.word))}
        missing = [(s, w) for s, w, _ in items if (int(remap[s]), int(w)) not in where]
        if missing:
            raise BertCoreError(f"{len(missing)} probe words got no vector (cut by the length limit)")
        return np.array([where[(int(remap[s]), int(w))] for s, w, _ in items])

    acc: dict[str, np.ndarray] = {}
    tr_acc: dict[str, np.ndarray] = {}
    preds: dict[str, np.ndarray] = {}
    jobs = [("pretrained", "pretrained", None)]
    if ctrl_train is not None:
        jobs.append(("control task", "pretrained", (ctrl_train, ctrl_valid)))
    jobs.append(("random weights", "random", None))
    units = len(jobs) + 2  # two forward passes (the model, its twin) and the fits of each row, weighed alike
    done = 0.0
    feats = {}
    for row, key, relabel in jobs:
        if key not in feats:
            feats.clear()  # the pretrained vectors are no longer needed once the twin's are read
            t0 = time.perf_counter()
            enc = untrained_encoder(m, seed) if key == "random" else m.model.bert
            base = done
            feats[key] = word_vectors(enc, m.tokenizer, sentences, max_len=min(128, m.max_length), dtype=np.float16,
                                      progress=lambda what, frac, base=base: report(what, (base + frac) / units),
                                      what="Reading the sentences" + (" (random weights)" if key == "random" else ""))
            del enc
            secs[f"features ({key})"] = time.perf_counter() - t0
            done += 1
        wv = feats[key]
        xi_tr, xi_va = rows_of(wv, task.train), rows_of(wv, task.valid)
        y_tr, y_va = (task.train[:, 2], task.valid[:, 2]) if relabel is None else relabel
        L1 = wv.vectors.shape[0]
        a, ta = np.zeros(L1), np.zeros(L1)
        p = np.zeros((L1, len(y_va)), dtype=np.int16)
        t0 = time.perf_counter()
        probe = None
        for layer in range(L1):
            report(f"Fitting the probes ({row}): layer {layer} of 0..{L1 - 1}", (done + layer / L1) / units)
            # Each layer's probe starts from the layer below's (neighbouring layers' standardised vectors are
            # alike): the same optimum (convex), reached in about 2/3 of the iterations.
            probe = fit_probe(wv.vectors[layer, xi_tr], y_tr, C, allowed=at_train, start=probe)
            pv = probe.predict(wv.vectors[layer, xi_va], at_valid)
            p[layer] = pv
            a[layer] = float((pv == y_va).mean())
            ta[layer] = float((probe.predict(wv.vectors[layer, xi_tr], at_train) == y_tr).mean())
        secs[f"fits ({row})"] = time.perf_counter() - t0
        acc[row], tr_acc[row], preds[row] = a, ta, p
        done += 1
    report("Done", 1.0)
    maj = float((majority_predictions(task) == task.valid[:, 2]).mean())
    return LayerProbes(task.name, task.labels, acc, tr_acc, maj, task.valid[:, 2].astype(np.int16), preds,
                       None if ctrl_valid is None else ctrl_valid.astype(np.int16), len(task.train),
                       len(task.valid), secs)



@dataclass(frozen=True)
class SenseVectors:
    """Every built-in example sentence of one word: the word's vector at every layer and the sense it has."""

    vectors: np.ndarray  # (L+1, n, H) float32
    senses: tuple[str, ...]  # (n,) "part of speech: definition"
    sentences: tuple[str, ...]  # (n,)


def sense_vectors(m: LoadedModel, word: str) -> SenseVectors:
    """The word's vectors in each of its built-in sense examples (both splits), for the 2-D projection."""
    ex = [r for r in sense_rows() if r[2] == word]
    if not ex:
        raise BertCoreError(f"{word!r} is not one of the built-in sense words")
    wv = word_vectors(m.model.bert, m.tokenizer, [r[5] for r in ex], max_len=min(128, m.max_length))
    where = {(int(s), int(w)): i for i, (s, w) in enumerate(zip(wv.sentence, wv.word))}
    keep = [j for j, r in enumerate(ex) if (j, r[4]) in where]
    return SenseVectors(wv.vectors[:, [where[(j, ex[j][4])] for j in keep]],
                        tuple(f"{ex[j][1]}: {ex[j][6]}" for j in keep), tuple(" ".join(ex[j][5]) for j in keep))
