"""bert_core: a readable BERT, its tokenizer, masking, analysis and training, for BERT Explorer.

    import bert_core
    m = bert_core.load_model()                       # the bundled offline model
    t = bert_core.analyze(m, "The cat [MASK] on the mat.")
    t.predictions                                    # {position: [(token, prob), ...]}
"""

from .analysis import EmbeddingParts, Trace, analyze, analyze_encoding, position_similarity
from .attribution import attention_rollout, head_stats, salience
from .classification import classify
from .errors import BertCoreError
from .inside_layers import (
    LayerSteps,
    LogitLens,
    RepeatedWord,
    ResidualStream,
    SameWord,
    layer_steps,
    logit_lens,
    residual_stream,
    same_word,
)
from .mask_filling import FillResult, PseudoLogLikelihood, fill_masks, pseudo_log_likelihood
from .masking import KEPT, MASKED, NOT_SELECTED, OUTCOME_NAMES, RANDOM, MaskingDraw, mask_tokens, masking_statistics
from .model import BertConfig, BertForPreTraining, BertModel, EncoderTrace, param_counts
from .pretrained import (
    BUNDLED_DIR,
    SUGGESTED_HUB_IDS,
    LoadedModel,
    load_model,
    model_from_state_dict,
    save_pretrained,
)
from .tokenization import MAX_TEXT_CHARS, Encoding, Truncation, WordPieceTokenizer, WordSplit, wordpiece_steps

__all__ = [
    "BUNDLED_DIR",
    "KEPT",
    "MASKED",
    "MAX_TEXT_CHARS",
    "NOT_SELECTED",
    "OUTCOME_NAMES",
    "RANDOM",
    "SUGGESTED_HUB_IDS",
    "BertConfig",
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
]

# Fine-tuning (issue 12): tasks, the loop, and the bag-of-words baseline.
from .finetuning import ClassificationTask, FineTuneConfig, FineTuner, bow_baseline, builtin_tasks, task_from_csv  # noqa: E402, I001

__all__ += ["ClassificationTask", "FineTuneConfig", "FineTuner", "bow_baseline", "builtin_tasks", "task_from_csv"]
