"""Load BERT checkpoints into our model: the bundled one, a local directory, or a hub id.

Weights come from safetensors only (a pickle can run code when loaded) and are copied key by
key into modules that carry Hugging Face's names, each shape asserted. No `trust_remote_code`:
we never run a checkpoint's code, only read its tensors, its config.json and its tokenizer files.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from .errors import BertCoreError
from .model import FAMILIES, BertConfig, BertForPreTraining
from .tokenization import WordPieceTokenizer

BUNDLED_DIR = Path(__file__).parent / "bundled"
BUNDLED_NAME = "bundled"
SUGGESTED_HUB_IDS = ("bert-base-uncased", "bert-base-cased", "bert-large-uncased",
                     "distilbert-base-uncased", "roberta-base", "albert-base-v2")
MAX_DOWNLOAD_BYTES = 1_500_000_000  # bert-large's weights are 1.34 GB; anything larger is refused
HUB_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$")
PICKLE_FILES = ("pytorch_model.bin", "pytorch_model.bin.index.json", "model.ckpt.index", "tf_model.h5",
                "flax_model.msgpack")
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "merges.txt", "tokenizer_config.json",
                   "special_tokens_map.json")
# Heads the explorer does not show: fine-tuning heads, ALBERT's sentence-order head.
IGNORED_HEAD_PREFIXES = ("classifier.", "qa_outputs.", "pre_classifier.", "sop_classifier.")

# Each family's checkpoint key -> ours, as (theirs, ours) templates: {N} a layer index, {P} weight or bias,
# {REST} anything. Keys match whole, first rule wins, and the same table maps back when saving, so a
# family is BERT under other names. BERT's own table is empty: our names are BERT's.
_LAYER = "bert.encoder.layer.{N}."
KEY_MAPS: dict[str, list[tuple[str, str]]] = {
    "bert": [],
    "roberta": [
        ("lm_head.dense.{P}", "cls.predictions.transform.dense.{P}"),
        ("lm_head.layer_norm.{P}", "cls.predictions.transform.LayerNorm.{P}"),
        ("lm_head.decoder.{P}", "cls.predictions.decoder.{P}"),
        ("lm_head.bias", "cls.predictions.bias"),
        ("roberta.{REST}", "bert.{REST}"),
    ],
    "distilbert": [
        ("distilbert.embeddings.{REST}", "bert.embeddings.{REST}"),
        ("distilbert.transformer.layer.{N}.attention.q_lin.{P}", _LAYER + "attention.self.query.{P}"),
        ("distilbert.transformer.layer.{N}.attention.k_lin.{P}", _LAYER + "attention.self.key.{P}"),
        ("distilbert.transformer.layer.{N}.attention.v_lin.{P}", _LAYER + "attention.self.value.{P}"),
        ("distilbert.transformer.layer.{N}.attention.out_lin.{P}", _LAYER + "attention.output.dense.{P}"),
        ("distilbert.transformer.layer.{N}.sa_layer_norm.{P}", _LAYER + "attention.output.LayerNorm.{P}"),
        ("distilbert.transformer.layer.{N}.ffn.lin1.{P}", _LAYER + "intermediate.dense.{P}"),
        ("distilbert.transformer.layer.{N}.ffn.lin2.{P}", _LAYER + "output.dense.{P}"),
        ("distilbert.transformer.layer.{N}.output_layer_norm.{P}", _LAYER + "output.LayerNorm.{P}"),
        ("vocab_transform.{P}", "cls.predictions.transform.dense.{P}"),
        ("vocab_layer_norm.{P}", "cls.predictions.transform.LayerNorm.{P}"),
        ("vocab_projector.weight", "cls.predictions.decoder.weight"),
        ("vocab_projector.bias", "cls.predictions.bias"),
    ],
    "albert": [
        ("albert.embeddings.{REST}", "bert.embeddings.{REST}"),
        ("albert.encoder.embedding_hidden_mapping_in.{P}", "bert.encoder.embedding_hidden_mapping_in.{P}"),
        *[(f"albert.encoder.albert_layer_groups.0.albert_layers.0.{theirs}.{{P}}",
           f"bert.encoder.shared_layer.{ours}.{{P}}")
          for theirs, ours in (("attention.query", "attention.self.query"), ("attention.key", "attention.self.key"),
                               ("attention.value", "attention.self.value"),
                               ("attention.dense", "attention.output.dense"),
                               ("attention.LayerNorm", "attention.output.LayerNorm"), ("ffn", "intermediate.dense"),
                               ("ffn_output", "output.dense"), ("full_layer_layer_norm", "output.LayerNorm"))],
        ("albert.pooler.{P}", "bert.pooler.dense.{P}"),
        ("predictions.dense.{P}", "cls.predictions.transform.dense.{P}"),
        ("predictions.LayerNorm.{P}", "cls.predictions.transform.LayerNorm.{P}"),
        ("predictions.decoder.{P}", "cls.predictions.decoder.{P}"),
        ("predictions.bias", "cls.predictions.bias"),
    ],
}
BASE_PREFIX = {"bert": "bert.", "roberta": "roberta.", "distilbert": "distilbert.", "albert": "albert."}
BARE_STARTS = ("embeddings.", "encoder.", "pooler.", "transformer.")  # keys of a bare encoder (HF's XModel)
# What `save_pretrained` calls each family's classes, per set of heads.
ARCHITECTURES = {
    "bert": ("BertForPreTraining", "BertForMaskedLM", "BertModel"),
    "roberta": (None, "RobertaForMaskedLM", "RobertaModel"),
    "distilbert": (None, "DistilBertForMaskedLM", "DistilBertModel"),
    "albert": (None, "AlbertForMaskedLM", "AlbertModel"),
}


def _template_re(t: str) -> re.Pattern:
    pat = re.escape(t).replace(r"\{N\}", r"(?P<N>\d+)").replace(r"\{P\}", r"(?P<P>weight|bias)")
    return re.compile(pat.replace(r"\{REST\}", r"(?P<REST>.+)"))


def _fill(t: str, m: re.Match) -> str:
    return t.format(**m.groupdict())


def map_key(family: str, key: str, to: str = "ours") -> str | None:
    """A checkpoint key in our names (`to="ours"`) or back in the family's (`to="theirs"`); None if no rule.

    Example: map_key("distilbert", "distilbert.transformer.layer.3.ffn.lin1.weight")
    -> "bert.encoder.layer.3.intermediate.dense.weight".
    """
    if family == "bert":
        return key
    for theirs, ours in KEY_MAPS[family]:
        src, dst = (theirs, ours) if to == "ours" else (ours, theirs)
        m = _template_re(src).fullmatch(key)
        if m:
            return _fill(dst, m)
    return None

Progress = Callable[[str, float], None]  # (what is happening, fraction done in [0, 1])


@dataclass
class LoadedModel:
    """A model ready to explore: weights (eval mode), tokenizer, and where they came from."""

    model: BertForPreTraining
    tokenizer: WordPieceTokenizer
    name: str
    source: str  # "bundled" | "local" | "hub" | "session"
    notes: list[str] = field(default_factory=list)  # e.g. which head is missing and why

    @property
    def config(self) -> BertConfig:
        return self.model.config

    @property
    def family(self) -> str:
        """"bert", "roberta", "distilbert" or "albert"."""
        return self.model.config.model_type

    @property
    def has_mlm(self) -> bool:
        return self.model.has_mlm

    @property
    def has_nsp(self) -> bool:
        return self.model.has_nsp

    @property
    def max_length(self) -> int:
        """Tokens that fit: RoBERTa's first padding_idx + 1 positions are never used (514 -> 512)."""
        return min(self.config.max_position_embeddings - self.config.position_offset, self.tokenizer.model_max_length)


def load_model(
    source: str | Path | None = None,
    *,
    allow_hub: bool = True,
    local_roots: list[str | Path] | None = None,
    max_download_bytes: int = MAX_DOWNLOAD_BYTES,
    progress: Progress | None = None,
) -> LoadedModel:
    """Load the bundled model (no argument), a local directory, or a Hugging Face hub id.

    `local_roots`, when given, confines local directories to those folders (for public servers).
    Every failure is a `BertCoreError` with a message a student can act on.
    """
    progress = progress or (lambda msg, frac: None)
    if source is None or str(source) == BUNDLED_NAME:
        if not (BUNDLED_DIR / "config.json").is_file():
            raise BertCoreError("the bundled model is missing: run `python -m bert_core.pretrain` to build it")
        return _load_dir(BUNDLED_DIR, BUNDLED_NAME, "bundled", progress)
    text = str(source).strip()
    path = Path(text).expanduser()
    if _is_dir(path):
        if local_roots is not None:
            real = path.resolve()
            if not any(real.is_relative_to(Path(r).resolve()) for r in local_roots):
                raise BertCoreError(f"local models may only be loaded from the configured folders, not {text!r}")
        return _load_dir(path, path.name, "local", progress)
    if not HUB_ID_RE.match(text) or ".." in text:
        raise BertCoreError(
            f"{text[:80]!r} is neither a local folder nor a hub id like 'bert-base-uncased' or 'org/name'"
        )
    if not allow_hub:
        raise BertCoreError("loading models from the hub is turned off on this server")
    return _load_dir(_download(text, max_download_bytes, progress), text, "hub", progress)


def _is_dir(path: Path) -> bool:
    """`Path.is_dir`, but False for names the OS refuses (too long, NUL bytes)."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def _download(repo_id: str, max_bytes: int, progress: Progress) -> Path:
    """Fetch config, safetensors weights and tokenizer files of `repo_id` into the HF cache."""
    try:
        from huggingface_hub import HfApi, snapshot_download
        from huggingface_hub.errors import (
            GatedRepoError,
            HfHubHTTPError,
            LocalEntryNotFoundError,
            RepositoryNotFoundError,
        )
    except ImportError as e:  # pragma: no cover - huggingface_hub is a requirement
        raise BertCoreError("huggingface_hub is not installed, so hub models cannot be loaded") from e
    progress(f"Looking up {repo_id} on the Hugging Face hub", 0.0)
    try:
        info = HfApi().model_info(repo_id, files_metadata=True)
        files = {s.rfilename: (s.size or 0) for s in (info.siblings or [])}
        if "config.json" not in files:
            raise BertCoreError(f"{repo_id} has no config.json, so it is not a transformers model")
        weights = [f for f in files if f.endswith(".safetensors") and "/" not in f]
        if not weights:
            pickles = [f for f in files if f in PICKLE_FILES]
            raise BertCoreError(
                f"{repo_id} has no safetensors weights ({', '.join(pickles) or 'no weights'} only); "
                "BERT Explorer loads safetensors only, because pickle files can run code when loaded"
            )
        size = sum(files[f] for f in weights)
        if size > max_bytes:
            raise BertCoreError(
                f"{repo_id}'s weights are {size / 1e9:.2f} GB; this server loads at most {max_bytes / 1e9:.2f} GB"
            )
        wanted = ["config.json", *weights, *(f for f in TOKENIZER_FILES if f in files)]
        if "model.safetensors.index.json" in files:
            wanted.append("model.safetensors.index.json")
        progress(f"Downloading {repo_id} ({size / 1e6:.0f} MB of weights)", 0.1)
        path = snapshot_download(repo_id, allow_patterns=wanted)
    except BertCoreError:
        raise
    except RepositoryNotFoundError as e:
        raise BertCoreError(f"the hub has no public model called {repo_id!r}") from e
    except GatedRepoError as e:
        raise BertCoreError(f"{repo_id} is gated on the hub and needs a login; pick another model") from e
    except (LocalEntryNotFoundError, OSError) as e:
        raise BertCoreError(
            f"could not reach the Hugging Face hub to download {repo_id!r} (no network?). "
            "The bundled model works offline."
        ) from e
    except HfHubHTTPError as e:
        raise BertCoreError(f"the hub refused {repo_id!r}: {str(e).splitlines()[0][:200]}") from e
    except Exception as e:  # httpx/requests connection errors differ by version; all mean "no hub"
        raise BertCoreError(
            f"could not download {repo_id!r} from the Hugging Face hub ({type(e).__name__}). "
            "The bundled model works offline."
        ) from e
    progress(f"Downloaded {repo_id}", 0.8)
    return Path(path)


def _load_dir(path: Path, name: str, source: str, progress: Progress) -> LoadedModel:
    """Read config.json, the safetensors weights and the tokenizer from one folder."""
    cfg_file = path / "config.json"
    if not cfg_file.is_file():
        raise BertCoreError(f"{name}: no config.json in the folder")
    try:
        raw = json.loads(cfg_file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BertCoreError(f"{name}: config.json is not valid JSON") from e
    model_type = raw.get("model_type")
    if model_type not in FAMILIES:
        raise BertCoreError(
            f"{name} is a {model_type or 'unknown'!s} model; BERT Explorer supports model_type "
            + ", ".join(repr(f) for f in FAMILIES)
        )
    if raw.get("auto_map"):
        # A config that points at its own Python code: we never run it (no trust_remote_code).
        raise BertCoreError(f"{name}'s config.json asks for custom code (auto_map), which BERT Explorer never runs")
    try:
        config = BertConfig.from_dict(raw)
    except (TypeError, ValueError) as e:
        raise BertCoreError(f"{name}: unusable config.json ({e})") from e
    # The tokenizer first: a folder we cannot tokenize, or whose tokenizer outgrows the embedding
    # matrix, is refused before the weights are read.
    tokenizer = WordPieceTokenizer.from_dir(path, model_max_length=config.max_position_embeddings
                                            - config.position_offset, family=config.model_type)
    if tokenizer.vocab_size > config.vocab_size:
        raise BertCoreError(
            f"{name}: the tokenizer has {tokenizer.vocab_size} tokens but the model's embedding matrix has only "
            f"{config.vocab_size} rows, so some token ids would have no embedding; the tokenizer and the weights "
            "do not belong together"
        )
    check_memory_for(path, name)  # before reading a byte of weights: refuse what cannot fit
    progress(f"Reading {name}'s weights", 0.85)
    state = read_safetensors(path, name)
    from .classification import classifier_from_state_dict, is_sequence_classifier  # imports this module

    # A fine-tuned sequence classifier of any family (id2label): BertForSequenceClassification and its siblings.
    if is_sequence_classifier(raw, state):
        model, notes = classifier_from_state_dict(config, raw, state, name)
    else:
        model, notes = model_from_state_dict(config, state, name)
    progress(f"Loaded {name}", 1.0)
    return LoadedModel(model, tokenizer, name, source, notes)


def read_safetensors(path: Path, name: str = "") -> dict[str, torch.Tensor]:
    """All tensors of `model.safetensors` (or its shards); refuse folders with only pickles."""
    index = path / "model.safetensors.index.json"
    if index.is_file():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        files = [path / s for s in shards]
    elif (path / "model.safetensors").is_file():
        files = [path / "model.safetensors"]
    else:
        pickles = [f for f in PICKLE_FILES if (path / f).exists()]
        if pickles:
            raise BertCoreError(
                f"{name or path.name} has only {', '.join(pickles)}: BERT Explorer loads safetensors only, "
                "because pickle files can run code when loaded. Convert it with "
                "`model.save_pretrained(dir, safe_serialization=True)` in transformers."
            )
        raise BertCoreError(f"{name or path.name}: no model.safetensors in the folder")
    state = {}
    for f in files:
        try:
            with safe_open(str(f), framework="pt") as fh:
                for k in fh.keys():
                    state[k] = fh.get_tensor(k)
        except Exception as e:
            raise BertCoreError(f"{name or path.name}: {f.name} is not a readable safetensors file") from e
    return state


def load_bytes(path: Path) -> int:
    """Bytes loading this folder's safetensors takes at its peak, from the headers alone (no weights read).

    The loader holds the file's tensors (as stored) and the model's (fp32) at once, so
    need = stored + 4 x elements. Example: bert-base, fp32 file: 440 MB + 440 MB = 880 MB;
    the same weights saved in fp16: 220 MB + 440 MB = 660 MB.
    """
    index = path / "model.safetensors.index.json"
    try:
        files = ([path / s for s in sorted(set(json.loads(index.read_text())["weight_map"].values()))]
                 if index.is_file() else [path / "model.safetensors"])
    except (ValueError, KeyError, TypeError, OSError):
        return 0  # read_safetensors reports a broken index plainly
    stored = elements = 0
    for f in files:
        try:
            with open(f, "rb") as fh:
                (n,) = struct.unpack("<Q", fh.read(8))  # safetensors: 8-byte header length, then JSON
                if n > 100_000_000:
                    return 0
                header = json.loads(fh.read(n))
            for k, t in header.items():
                if k != "__metadata__":
                    stored += t["data_offsets"][1] - t["data_offsets"][0]
                    elements += math.prod(t["shape"])
        except (OSError, ValueError, KeyError, TypeError, struct.error, AttributeError):
            return 0  # not readable as safetensors: read_safetensors says so
    return stored + 4 * elements


def memory_available_bytes(proc: str = "/proc", cgroup: str = "/sys/fs/cgroup") -> int | None:
    """Bytes this process may still allocate, or None when unknown.

    `BERT_EXPLORER_MEMORY_MB`, when set, is the server's whole limit (minus what this process holds
    now; 0 turns the check off); otherwise the smaller of the system's MemAvailable and the
    container's cgroup headroom (memory.max minus what it uses, reclaimable file cache not counted).
    """
    raw = os.environ.get("BERT_EXPLORER_MEMORY_MB", "").strip()
    if raw:
        try:
            mb = float(raw)
        except ValueError:
            raise BertCoreError(f"BERT_EXPLORER_MEMORY_MB={raw!r} is not a number of MB") from None
        return None if mb <= 0 else int(mb * 2**20) - _read_kb(f"{proc}/self/status", "VmRSS:") * 1024
    found = []
    avail = _read_kb(f"{proc}/meminfo", "MemAvailable:")
    if avail:
        found.append(avail * 1024)
    for limit_f, used_f, stat_f, inactive in (("memory.max", "memory.current", "memory.stat", "inactive_file"),
                                              ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes",
                                               "memory/memory.stat", "total_inactive_file")):
        try:
            limit = Path(cgroup, limit_f).read_text().strip()
            used = int(Path(cgroup, used_f).read_text())
        except (OSError, ValueError):
            continue
        if not limit.isdigit() or int(limit) >= 2**60:  # "max", or cgroup v1's "no limit"
            continue
        stat = dict(line.split() for line in Path(cgroup, stat_f).read_text().splitlines() if line.count(" ") == 1) \
            if Path(cgroup, stat_f).is_file() else {}
        found.append(int(limit) - used + int(stat.get(inactive, 0)))
        break
    return min(found) if found else None


def _read_kb(file: str, key: str) -> int:
    try:
        for line in Path(file).read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def check_memory_for(path: Path, name: str) -> None:
    """Refuse, before loading, a checkpoint whose load would not fit the memory left on this server."""
    need, free = load_bytes(path), memory_available_bytes()
    if free is not None and need > free:
        raise BertCoreError(
            f"{name} is too big for the memory left on this server: loading it takes about "
            f"{need / 2**20:,.0f} MB (its weights as stored plus the model in fp32) and only "
            f"{max(free, 0) / 2**20:,.0f} MB is free. Pick a smaller model (the bundled one is 26 MB)."
        )


def _normalise_key(k: str, family: str = "bert") -> str:
    """HF's bare encoders (BertModel, ...) lack the family prefix; old TF-converted files say gamma/beta."""
    if k.startswith(BARE_STARTS):
        k = BASE_PREFIX[family] + k
    return k.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")


def model_from_state_dict(config: BertConfig, state: dict, name: str = "") -> tuple[BertForPreTraining, list[str]]:
    """Build our model with the heads the checkpoint has, then copy its tensors key by key.

    Another family's keys are first renamed to ours (`map_key`); a key no rule maps is an error,
    and so is one of our tensors that no checkpoint key fills (checked below): asserted both ways.
    """
    family = config.model_type
    sd = {}
    ignored = []
    for k, v in state.items():
        k = _normalise_key(k, family)
        if k.endswith(("position_ids", "token_type_ids")):  # buffers older files saved, not weights
            continue
        if k.startswith(IGNORED_HEAD_PREFIXES):
            ignored.append(k)
            continue
        ours = map_key(family, k)
        if ours is None:
            raise BertCoreError(f"{name}: the checkpoint has a tensor {k!r} that a {family} model does not have")
        sd[ours] = v
    mlm = any(k.startswith("cls.predictions.") for k in sd)
    nsp = "cls.seq_relationship.weight" in sd
    pooler = "bert.pooler.dense.weight" in sd
    decoder = sd.pop("cls.predictions.decoder.weight", None)
    decoder_bias = sd.pop("cls.predictions.decoder.bias", None)  # RoBERTa/ALBERT tie it to the head's bias
    if decoder_bias is not None and "cls.predictions.bias" not in sd:
        sd["cls.predictions.bias"] = decoder_bias
    elif decoder_bias is not None and not torch.equal(decoder_bias, sd["cls.predictions.bias"]):
        raise BertCoreError(f"{name}: the MLM decoder's bias differs from the head's bias, which are one tensor")
    model = BertForPreTraining(config, mlm=mlm, nsp=nsp, pooler=pooler)
    ours = {k: v for k, v in model.state_dict().items() if k != "cls.predictions.decoder.weight"}
    missing, extra = sorted(set(ours) - set(sd)), sorted(set(sd) - set(ours))
    if missing or extra:
        raise BertCoreError(
            f"{name}: the checkpoint's tensors do not match a {family} model of this config "
            f"(missing {missing[:3]}{'...' if len(missing) > 3 else ''}, "
            f"unexpected {extra[:3]}{'...' if len(extra) > 3 else ''})"
        )
    with torch.no_grad():
        for k, target in ours.items():
            src = sd[k]
            if src.shape != target.shape:
                raise BertCoreError(f"{name}: {k} has shape {tuple(src.shape)}, config says {tuple(target.shape)}")
            target.copy_(src.to(target.dtype))
    if mlm and decoder is not None and not torch.equal(decoder.float(), model.bert.embeddings.word_embeddings.weight):
        raise BertCoreError(f"{name}: the MLM decoder is not tied to the word embeddings, which {family} requires")
    model.eval()
    notes = []
    if not mlm:
        notes.append("This checkpoint has no masked-language-model head (encoder only): predictions are unavailable.")
    elif not nsp and family == "bert":
        notes.append("This checkpoint has no next-sentence-prediction head: NSP probabilities are unavailable.")
    if ignored:
        notes.append(f"Ignored a fine-tuning head ({ignored[0].split('.')[0]}) the explorer does not show.")
    return model, notes


def save_pretrained(model: BertForPreTraining, tokenizer: WordPieceTokenizer, out_dir: str | Path) -> Path:
    """Write config.json, model.safetensors (HF names) and tokenizer files; HF loads them too."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    family = model.config.model_type
    pretraining, mlm, bare = ARCHITECTURES[family]
    arch = pretraining if model.has_nsp else mlm if model.has_mlm else bare
    cfg = {**model.config.to_hf_dict(), "model_type": family, "architectures": [arch], "tie_word_embeddings": True}
    (out / "config.json").write_text(json.dumps(cfg, indent=2))
    # The decoder weight is the word-embedding tensor (tied): store it once, as HF does.
    sd = {map_key(family, k, to="theirs"): v.detach().contiguous().cpu() for k, v in model.state_dict().items()
          if k != "cls.predictions.decoder.weight"}
    if arch == bare:
        sd = {k.removeprefix(BASE_PREFIX[family]): v for k, v in sd.items()}
    save_file(sd, str(out / "model.safetensors"), metadata={"format": "pt"})
    tokenizer.save(out)
    return out
