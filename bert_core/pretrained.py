"""Load BERT checkpoints into our model: the bundled one, a local directory, or a hub id.

Weights come from safetensors only (a pickle can run code when loaded) and are copied key by
key into modules that carry Hugging Face's names, each shape asserted. No `trust_remote_code`:
we never run a checkpoint's code, only read its tensors, its config.json and its tokenizer files.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from .errors import BertCoreError
from .model import BertConfig, BertForPreTraining
from .tokenization import WordPieceTokenizer

BUNDLED_DIR = Path(__file__).parent / "bundled"
BUNDLED_NAME = "bundled"
SUGGESTED_HUB_IDS = ("bert-base-uncased", "bert-base-cased", "bert-large-uncased")
MAX_DOWNLOAD_BYTES = 1_500_000_000  # bert-large's weights are 1.34 GB; anything larger is refused
HUB_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$")
PICKLE_FILES = ("pytorch_model.bin", "pytorch_model.bin.index.json", "model.ckpt.index", "tf_model.h5",
                "flax_model.msgpack")
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json")
IGNORED_HEAD_PREFIXES = ("classifier.", "qa_outputs.")  # fine-tuning heads the explorer does not show

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
    def has_mlm(self) -> bool:
        return self.model.has_mlm

    @property
    def has_nsp(self) -> bool:
        return self.model.has_nsp

    @property
    def max_length(self) -> int:
        return min(self.config.max_position_embeddings, self.tokenizer.model_max_length)


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
    if model_type != "bert":
        raise BertCoreError(
            f"{name} is a {model_type or 'unknown'!s} model; "
            "BERT Explorer supports model_type 'bert' only (not yet others)"
        )
    try:
        config = BertConfig.from_dict(raw)
    except (TypeError, ValueError) as e:
        raise BertCoreError(f"{name}: unusable config.json ({e})") from e
    progress(f"Reading {name}'s weights", 0.85)
    state = read_safetensors(path, name)
    from .classification import classifier_from_state_dict, is_sequence_classifier  # imports this module

    if is_sequence_classifier(raw, state):  # a fine-tuned BertForSequenceClassification (id2label)
        model, notes = classifier_from_state_dict(config, raw, state, name)
    else:
        model, notes = model_from_state_dict(config, state, name)
    tokenizer = WordPieceTokenizer.from_dir(path, model_max_length=config.max_position_embeddings)
    if tokenizer.vocab_size > config.vocab_size:
        raise BertCoreError(
            f"{name}: the tokenizer has {tokenizer.vocab_size} tokens but the model only {config.vocab_size}"
        )
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


def _normalise_key(k: str) -> str:
    """HF BertModel keys lack the `bert.` prefix; old TF-converted files say gamma/beta."""
    if k.startswith(("embeddings.", "encoder.", "pooler.")):
        k = "bert." + k
    return k.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")


def model_from_state_dict(config: BertConfig, state: dict, name: str = "") -> tuple[BertForPreTraining, list[str]]:
    """Build our model with the heads the checkpoint has, then copy its tensors key by key."""
    sd = {}
    ignored = []
    for k, v in state.items():
        k = _normalise_key(k)
        if k.endswith("position_ids"):  # a buffer older files saved; positions are 0..T-1
            continue
        if k.startswith(IGNORED_HEAD_PREFIXES):
            ignored.append(k)
            continue
        sd[k] = v
    mlm = any(k.startswith("cls.predictions.") for k in sd)
    nsp = "cls.seq_relationship.weight" in sd
    pooler = "bert.pooler.dense.weight" in sd
    decoder = sd.pop("cls.predictions.decoder.weight", None)
    decoder_bias = sd.pop("cls.predictions.decoder.bias", None)
    if decoder_bias is not None and "cls.predictions.bias" not in sd:
        sd["cls.predictions.bias"] = decoder_bias
    model = BertForPreTraining(config, mlm=mlm, nsp=nsp, pooler=pooler)
    ours = {k: v for k, v in model.state_dict().items() if k != "cls.predictions.decoder.weight"}
    missing, extra = sorted(set(ours) - set(sd)), sorted(set(sd) - set(ours))
    if missing or extra:
        raise BertCoreError(
            f"{name}: the checkpoint's tensors do not match a BERT of this config "
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
        raise BertCoreError(f"{name}: the MLM decoder is not tied to the word embeddings, which BERT requires")
    model.eval()
    notes = []
    if not mlm:
        notes.append("This checkpoint has no masked-language-model head (encoder only): predictions are unavailable.")
    elif not nsp:
        notes.append("This checkpoint has no next-sentence-prediction head: NSP probabilities are unavailable.")
    if ignored:
        notes.append(f"Ignored a fine-tuning head ({ignored[0].split('.')[0]}) the explorer does not show.")
    return model, notes


def save_pretrained(model: BertForPreTraining, tokenizer: WordPieceTokenizer, out_dir: str | Path) -> Path:
    """Write config.json, model.safetensors (HF names) and tokenizer files; HF loads them too."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    arch = "BertForPreTraining" if model.has_nsp else "BertForMaskedLM" if model.has_mlm else "BertModel"
    cfg = {**model.config.to_dict(), "model_type": "bert", "architectures": [arch]}
    (out / "config.json").write_text(json.dumps(cfg, indent=2))
    # The decoder weight is the word-embedding tensor (tied): store it once, as HF does.
    sd = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()
          if k != "cls.predictions.decoder.weight"}
    if arch == "BertModel":
        sd = {k.removeprefix("bert."): v for k, v in sd.items()}
    save_file(sd, str(out / "model.safetensors"), metadata={"format": "pt"})
    tokenizer.save(out)
    return out
