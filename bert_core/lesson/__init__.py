"""The guided lesson's questions: each answer computed from the model at view time, never written in.

Top layer of bert_core: may import every package below it (runs, train, inspect, objectives, model);
nothing in bert_core imports it. The Lesson page (views/lesson.py, ui/lesson/) draws what it returns.
"""

from . import heads
from .questions import QUESTIONS, Question, bert_base_config

QUESTIONS.update(heads.QUESTIONS)  # the knock-out step's question (heads.py reads questions.py, not the reverse)

__all__ = ["QUESTIONS", "Question", "bert_base_config"]
