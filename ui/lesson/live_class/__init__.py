"""A live class on the Lesson page: the teacher starts it, students join from their own devices and vote.

session: this session's place in a class (`follow`); teacher, student: each side's controls; shared: the step view
a class's followers share; join: the code, link and QR code; results: the split and the end-of-lesson table; panel:
what the Lesson's roles call (`question_ui`: a student's vote; `panel`; a teacher's question is teacher's
`teacher_question`); push: the listener that reruns a following student's step when the teacher moves; reads: the
class read once per process for its followers at a change. The class's state is classroom's (a store in this
process, or Redis for several).
"""
