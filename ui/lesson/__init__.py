"""The Lesson: a guided tour of BERT in 13 steps (views/lesson.py is its page).

content: the steps as data; views: each step's live view and its question; state: the session's step, sentences,
guesses and the callbacks; controls: the sentence boxes and presenter mode; notebooks: a step as a notebook; roles:
one renderer per role (a student alone, presenter mode, a class's teacher, a following student), chosen once per run;
handout, handout_doc, handout_svg, handout_record: the take-home file. The live class's part of the page is
ui/lesson/live_class.
"""
