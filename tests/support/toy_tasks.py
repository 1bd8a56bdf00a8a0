"""Toy fine-tuning tasks in the tiny test vocabulary (tests/support/checkpoints.py): a classification task, a QA
task and a tagging task, each learnable from a single word."""

from __future__ import annotations

from bert_core.finetune.qa import QAExample, QATask
from bert_core.finetune.tasks import ClassificationTask, task_from_csv

# Two classes a single word tells apart.
ANIMAL = ["the cat sat on the mat", "a dog was playing", "the cat is playing", "she bought a dog",
          "it was a cat", "the dog sat", "a cat and a dog", "we sat on the cat mat", "the dog is it",
          "they and the cat"]
SHOP = ["he went to the store", "she bought milk", "i went to paris", "we bought milk in paris",
        "the store was in paris", "you went to the store", "milk and the store", "they bought it in the store",
        "he bought the milk", "a store in paris"]


def classification_task() -> ClassificationTask:
    """Two classes a single word tells apart (the tiny test vocabulary's words)."""
    rows = "text,label\n" + "\n".join(f"{t},animal" for t in ANIMAL) + "\n" + "\n".join(f"{t},shop" for t in SHOP)
    return task_from_csv(rows, name="toy", valid_fraction=0.3, seed=0)


THINGS = ["cat", "dog", "mat", "store", "milk", "cafe", "paris"]
QA_SENTENCES = ["the {} sat on it.", "she bought the {}.", "we went to the {}.", "it was a {}."]


def qa_task(n: int = 24) -> QATask:
    """Questions "the X ?" over two short sentences, one holding X (a word the tiny test vocabulary has)."""
    out = []
    for i in range(n):
        a, b = THINGS[i % 7], THINGS[(i + 3) % 7]
        s1, s2 = QA_SENTENCES[i % 4].format(a), QA_SENTENCES[(i + 1) % 4].format(b)
        context = f"{s1} {s2}" if i % 2 else f"{s2} {s1}"
        out.append(QAExample(f"the {a} ?", context, context.index(f" {a}") + 1, a))
    return QATask("toy", tuple(out[:-6]), tuple(out[-6:]))


# A toy tagging task: animals vs places vs the rest; "unaffable" is three pieces.
TAG_SENTENCES = ["the cat sat on the mat", "a dog was playing in paris", "she bought milk in the store",
                 "the unaffable cat went to paris", "we sat in the cafe", "he and the dog went to the store",
                 "they bought a cat", "the dog sat on it", "i went to the cafe in paris", "you and the cat played",
                 "the mat was in the store", "a cat and a dog"]
ANIMALS, PLACES = {"cat", "dog"}, {"paris", "store", "cafe", "mat"}


def tagging_conll() -> str:
    """The toy tagging task as CoNLL text (word TAB tag, a blank line between sentences)."""
    def tag(w):
        return "ANIMAL" if w in ANIMALS else "PLACE" if w in PLACES else "O"
    return "\n\n".join("\n".join(f"{w}\t{tag(w)}" for w in s.split()) for s in TAG_SENTENCES) + "\n"
