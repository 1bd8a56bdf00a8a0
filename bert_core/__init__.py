"""bert_core: a readable BERT, its tokenizer, masking, analysis and training, for BERT Explorer.

The public API is this module's names; the packages behind it are layered (docs/architecture.md):
model < objectives < inspect < train < finetune < runs (and probe), lesson on top, figures apart.

    import bert_core
    m = bert_core.load_model()                       # the default offline model (bundled MiniLM)
    t = bert_core.analyze(m, "The cat [MASK] on the mat.")
    t.predictions                                    # {position: [(token, prob), ...]}
"""

__version__ = "0.1.0"

from .errors import BertCoreError
from .finetune.finetuning import FineTuneConfig, FineTuner, finetune_defaults, run_cost
from .finetune.tasks import ClassificationTask, bow_baseline, builtin_tasks, task_from_csv
from .inspect.analysis import EmbeddingParts, Trace, analyze, analyze_encoding, position_similarity
from .inspect.attribution import attention_rollout, head_stats, salience
from .inspect.classify import classify
from .inspect.generation import Generation, generate
from .inspect.inside_layers import LayerSteps, layer_steps
from .inspect.interventions import (
    KnockOut,
    PatchResult,
    PruningCurve,
    head_importance,
    knock_out,
    patch_activations,
    pruning_curve,
)
from .inspect.mask_filling import FillResult, PseudoLogLikelihood, fill_masks, pseudo_log_likelihood
from .inspect.replaced import ReplacedTokens, replaced_token_probs
from .inspect.residual import (
    LogitLens,
    RepeatedWord,
    ResidualStream,
    SameWord,
    logit_lens,
    residual_stream,
    same_word,
)
from .inspect.sentences import cosine_matrix, nearest, sentence_embedding
from .inspect.token_tasks import AnswerResult, Tagging, answer, tag
from .model.checkpoint import model_from_state_dict, save_pretrained
from .model.config import BertConfig
from .model.counts import param_counts
from .model.encoder import BertModel, EncoderTrace, Patch
from .model.heads import BertForPreTraining
from .model.loaded import LoadedModel
from .model.loading import (
    BUNDLED_DIR,
    BUNDLED_MODELS,
    BUNDLED_NAME,
    DEFAULT_BUNDLED,
    MINILM_DIR,
    MINILM_NAME,
    SUGGESTED_HUB_IDS,
    cached_hub_snapshot,
    download_model,
    is_hub_id,
    load_model,
)
from .model.tokenization import MAX_TEXT_CHARS, Encoding, Truncation, WordPieceTokenizer, WordSplit, wordpiece_steps
from .model.untrained import untrained_copy
from .objectives.masking import (
    KEPT,
    MASKED,
    NOT_SELECTED,
    OUTCOME_NAMES,
    RANDOM,
    MaskingDraw,
    mask_tokens,
    masking_statistics,
)

__all__ = [
    "BUNDLED_DIR",
    "BUNDLED_MODELS",
    "BUNDLED_NAME",
    "DEFAULT_BUNDLED",
    "KEPT",
    "MASKED",
    "MAX_TEXT_CHARS",
    "MINILM_DIR",
    "MINILM_NAME",
    "NOT_SELECTED",
    "OUTCOME_NAMES",
    "RANDOM",
    "SUGGESTED_HUB_IDS",
    "cached_hub_snapshot",
    "download_model",
    "is_hub_id",
    "BertConfig",
    "AnswerResult",
    "Generation",
    "generate",
    "ReplacedTokens",
    "replaced_token_probs",
    "Tagging",
    "answer",
    "tag",
    "cosine_matrix",
    "nearest",
    "sentence_embedding",
    "BertCoreError",
    "BertForPreTraining",
    "BertModel",
    "EmbeddingParts",
    "Encoding",
    "EncoderTrace",
    "LoadedModel",
    "MaskingDraw",
    "Trace",
    "Truncation",
    "WordPieceTokenizer",
    "WordSplit",
    "analyze",
    "analyze_encoding",
    "classify",
    "load_model",
    "mask_tokens",
    "masking_statistics",
    "model_from_state_dict",
    "param_counts",
    "position_similarity",
    "save_pretrained",
    "wordpiece_steps",
    "attention_rollout",
    "head_stats",
    "salience",
    "FillResult",
    "PseudoLogLikelihood",
    "fill_masks",
    "pseudo_log_likelihood",
    "LayerSteps",
    "LogitLens",
    "RepeatedWord",
    "ResidualStream",
    "SameWord",
    "layer_steps",
    "logit_lens",
    "residual_stream",
    "same_word",
    "KnockOut",
    "knock_out",
    "Patch",
    "PatchResult",
    "PruningCurve",
    "head_importance",
    "patch_activations",
    "pruning_curve",
    "ClassificationTask",
    "FineTuneConfig",
    "FineTuner",
    "bow_baseline",
    "builtin_tasks",
    "task_from_csv",
    "finetune_defaults",
    "run_cost",
    "untrained_copy",
]
