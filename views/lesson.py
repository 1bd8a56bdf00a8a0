"""Lesson: a guided tour of BERT in steps, each with a live view of the step's sentence and a question to answer
before the model's own numbers are revealed. ?step=k opens step k; ?present=1 is presenter mode; ?class=CODE joins a
live class. The page picks this run's renderer (ui/lesson/roles.py) and runs it."""

from ui.lesson import roles
from ui.lesson.live_class.session import follow

roles.defaults()
live = follow()  # a live class: join links; a following student takes the teacher's step
roles.choose(live).run(live)
