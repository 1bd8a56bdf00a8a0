"""Checkpoint keys: each family's names mapped onto ours, tensors copied key by key, saved back as HF's.

A family is BERT under other names: the same tables map a RoBERTa, DistilBERT or ALBERT checkpoint onto
our modules when loading and back when saving, and every key is asserted both ways.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import torch
from safetensors.torch import save_file

from ..errors import BertCoreError
from .config import BertConfig
from .heads import BertForPreTraining
from .tokenization import WordPieceTokenizer

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
    "electra": [  # the generator's MLM head and the discriminator's replaced-token head, around BERT's layers
        ("electra.embeddings_project.{P}", "bert.encoder.embeddings_project.{P}"),
        ("generator_predictions.dense.{P}", "cls.predictions.transform.dense.{P}"),
        ("generator_predictions.LayerNorm.{P}", "cls.predictions.transform.LayerNorm.{P}"),
        ("generator_lm_head.weight", "cls.predictions.decoder.weight"),
        ("generator_lm_head.bias", "cls.predictions.bias"),
        ("discriminator_predictions.dense.{P}", "discriminator_predictions.dense.{P}"),
        ("discriminator_predictions.dense_prediction.{P}", "discriminator_predictions.dense_prediction.{P}"),
        ("electra.{REST}", "bert.{REST}"),
    ],
}
BASE_PREFIX = {"bert": "bert.", "roberta": "roberta.", "distilbert": "distilbert.", "albert": "albert.",
               "electra": "electra."}
# Keys of a bare encoder (HF's XModel; ElectraModel's projection sits beside its embeddings).
BARE_STARTS = ("embeddings.", "encoder.", "pooler.", "transformer.", "embeddings_project.")
# What `save_pretrained` calls each family's classes, per set of heads.
ARCHITECTURES = {
    "bert": ("BertForPreTraining", "BertForMaskedLM", "BertModel"),
    "roberta": (None, "RobertaForMaskedLM", "RobertaModel"),
    "distilbert": (None, "DistilBertForMaskedLM", "DistilBertModel"),
    "albert": (None, "AlbertForMaskedLM", "AlbertModel"),
    "electra": ("ElectraForPreTraining", "ElectraForMaskedLM", "ElectraModel"),  # discriminator, generator, bare
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
    rtd = "discriminator_predictions.dense_prediction.weight" in sd
    decoder = sd.pop("cls.predictions.decoder.weight", None)
    decoder_bias = sd.pop("cls.predictions.decoder.bias", None)  # RoBERTa/ALBERT tie it to the head's bias
    if decoder_bias is not None and "cls.predictions.bias" not in sd:
        sd["cls.predictions.bias"] = decoder_bias
    elif decoder_bias is not None and not torch.equal(decoder_bias, sd["cls.predictions.bias"]):
        raise BertCoreError(f"{name}: the MLM decoder's bias differs from the head's bias, which are one tensor")
    model = BertForPreTraining(config, mlm=mlm, nsp=nsp, pooler=pooler, rtd=rtd)
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
    if rtd:
        notes.append("An ELECTRA discriminator: for every token it says how likely it is that the token was replaced "
                     "(bert_core.replaced_token_probs); it has no masked-language-model head to fill a [MASK].")
    elif not mlm:
        notes.append("This checkpoint has no masked-language-model head (encoder only): predictions are unavailable.")
    elif not nsp and family == "bert":
        notes.append("This checkpoint has no next-sentence-prediction head: NSP probabilities are unavailable.")
    if ignored:
        notes.append(f"Ignored a fine-tuning head ({ignored[0].split('.')[0]}) the explorer does not show.")
    return model, notes


def save_pretrained(model: BertForPreTraining, tokenizer: WordPieceTokenizer, out_dir: str | Path,
                    dtype: torch.dtype | None = None) -> Path:
    """Write config.json, model.safetensors (HF names) and tokenizer files; HF loads them too.

    `dtype=torch.float16` stores the weights at half the size; the loader upcasts them to fp32.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    family = model.config.model_type
    pretraining, mlm, bare = ARCHITECTURES[family]
    arch = pretraining if model.has_nsp else mlm if model.has_mlm else bare
    if model.has_rtd:
        if family != "electra" or model.has_mlm:
            raise BertCoreError("a replaced-token head is saved as an ELECTRA discriminator: model_type electra, "
                                "no MLM head")
        arch = pretraining  # ElectraForPreTraining
    if model.config.is_decoder and family == "bert" and model.has_mlm and not model.has_nsp:
        arch = "BertLMHeadModel"  # a causal model (clm objective): transformers' left-to-right BERT
    cfg = {**model.config.to_hf_dict(), "model_type": family, "architectures": [arch], "tie_word_embeddings": True}
    (out / "config.json").write_text(json.dumps(cfg, indent=2))
    # The decoder weight is the word-embedding tensor (tied): store it once, as HF does.
    sd = {map_key(family, k, to="theirs"): v.detach().to(dtype or v.dtype).contiguous().cpu()
          for k, v in model.state_dict().items() if k != "cls.predictions.decoder.weight"}
    if arch == bare:
        sd = {k.removeprefix(BASE_PREFIX[family]): v for k, v in sd.items()}
    save_file(sd, str(out / "model.safetensors"), metadata={"format": "pt"})
    tokenizer.save(out)
    return out
