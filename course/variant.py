"""Each student's own variant of the experiments the written questions ask about.

A question graded by hand asks about the student's own results. If every run printed the same
numbers, one published answer (or a classmate's) would serve the whole class and could not be told
from honest work. So each experiment such a question reads takes its settings (a seed, a number of
keys, a sentence pair) from the student's id, as PrairieLearn gives each student a variant of a
question: two students get different numbers without choosing anything, and the graded run, given
the same id, reproduces them. Hidden tests never use a variant: they keep their withheld inputs.

The id comes from ``COURSE_STUDENT`` (:mod:`course.settings`: the grader sets it inside each kernel
before the submission's cells run, a TA's kernel gets it from the notebook's folder), else from the
file :data:`ID_FILE` in the notebook's folder (the setup cell writes it the first time it asks, and
the submission check's fresh run copies it), else the setup cell asks once. A run nobody
can ask (a program executing the notebook) gets the worked example's variant, :data:`WORKED`: the
one the model answers and `make solutions` show.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from course import settings

#: The file that keeps the id between sessions, in the folder the notebook runs in.
ID_FILE = ".course-student"
#: The id of the worked example: its variant is the one the model answers quote.
WORKED = "worked-example"
#: How the setup cell's line starts (the TA's page and the report read it back from the outputs).
PRINTED = "Your variant of student "
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}")
_RULE = "letters, digits and . _ @ + -, at most 64, starting with a letter or digit"


class Pair(NamedTuple):
    """Two sentences that use one word in two senses; the question reads the word's second use."""

    text: str
    text_pair: str
    word: str

    def __str__(self) -> str:
        return f'"{self.text}" / "{self.text_pair}", word "{self.word}"'


#: Headwords in the style of the dictionary assignment 6's model learns from ("LOVE, n.  " is its prompt).
HEADWORDS = tuple(
    "LOVE HOPE WAR PEACE FRIEND MONEY TRUTH BRAIN HEART KING GHOST WIT FAME DEBT CAT DOG BOOK RIVER MUSIC "
    "NIGHT DREAM TIME HISTORY COURAGE PATIENCE SILENCE WEATHER DINNER LAWYER POET".split()
)

#: Each assignment's settings and the values a variant picks from. The first value of each is the
#: worked example's (the model answers quote its numbers); a student's variant is drawn from the
#: others, so no student's numbers are the published ones.
CHOICES: dict[str, dict[str, tuple]] = {
    "01_attention": {
        "seed": tuple(range(0, 1000)),  # the sqrt(d_k) experiment's random draws
        "keys": (16, 8, 12, 24, 32),  # how many keys each query's softmax spreads over
    },
    "02_distilbert": {
        "sentence": (  # the sentence of the figure of what [CLS] attends to (question 1)
            "This was one of the best movies I have ever seen.",
            "The acting was wooden and the story went nowhere.",
            "A quiet, beautiful film that stays with you.",
            "I laughed from the first scene to the last.",
            "Two hours of my life I will never get back.",
            "The music is lovely but the dialogue is clumsy.",
            "An honest, moving portrait of a small town.",
            "Nothing in this film makes any sense at all.",
            "The cast is superb and the ending is perfect.",
            "It starts well and then falls completely apart.",
            "A clever thriller with a twist I did not see coming.",
            "The jokes are old and the characters are flat.",
        ),
        "short": tuple(  # the short review of the padding experiment (question 2)
            "Boring. Dull. Superb. Awful! Brilliant. Terrible. Pointless. Wonderful! Gripping. Forgettable. "
            "Charming. Tedious. Delightful. Dreadful.".split()
        ),
    },
    "03_visualising_attention": {
        "pair": (
            Pair("time flies like an arrow", "fruit flies like a banana", "flies"),
            Pair("the bank raised its rates", "we sat on the river bank", "bank"),
            Pair("she will park the car", "the children play in the park", "park"),
            Pair("he can not bear the noise", "a bear slept in the cave", "bear"),
            Pair("the match lit the candle", "we won the match on sunday", "match"),
            Pair("please book a table", "she read the book twice", "book"),
            Pair("they watch the game", "my watch stopped at noon", "watch"),
            Pair("the bat flew out of the cave", "he swung the bat hard", "bat"),
            Pair("the pitcher threw the ball", "she poured water from the pitcher", "pitcher"),
            Pair("he will lead the team", "the pipe is made of lead", "lead"),
            Pair("she left the room", "turn left at the light", "left"),
            Pair("the wind was strong", "wind the clock before bed", "wind"),
            Pair("they row the boat", "we sat in the front row", "row"),
            Pair("the duck swam away", "duck under the low branch", "duck"),
            Pair("a fair price was paid", "we went to the county fair", "fair"),
            Pair("the rose was red", "the sun rose early", "rose"),
            Pair("he can fly a plane", "a fly landed on the soup", "fly"),
            Pair("the spring rain fell", "the spring in the clock broke", "spring"),
        ),
    },
    "04_finetuning": {
        "seed": tuple(range(0, 1000)),  # the runs' head initialisation, dropout and batch order
    },
    "06_training_decoders": {
        "headword": HEADWORDS,  # the prompt the trained model writes from (question 1)
        "sample_seed": tuple(range(0, 1000)),  # the sampling generator's seed (question 1)
        "window": tuple(
            range(200, 36_000, 250)
        ),  # where the attention figure's validation window starts (question 2)
        "sequence": tuple(range(5, 1005)),  # the digit sequence of the cross-attention figure (question 3)
    },
    "07_question_answering": {
        "question": tuple(range(11, 1011)),  # section 5's question (its attention figure, question 1)
        "long_question": tuple(range(16, 1016)),  # the long context in windows (question 2a)
        "stride_questions": tuple(range(3, 1003)),  # the 60 long questions of the stride table (question 2b)
    },
}

#: The assignments whose questions read nothing a variant could change, and why: they have no
#: variants (and their setup cells ask for no id).
WITHOUT_VARIANTS: dict[str, str] = {
    "05_decoder": "its one question reads the student's own timings of the KV cache, which differ from machine to "
    "machine without a variant",
}


@dataclass(frozen=True)
class Variant:
    """One student's settings for one assignment's experiments (read them as attributes)."""

    assignment: str
    student: str
    values: dict = field(default_factory=dict)

    def __getattr__(self, name: str):
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(f"the variant of {self.assignment} has no setting {name!r}") from None

    def describe(self) -> str:
        """One line naming the id and every setting, as the setup cell prints it (the TA's page and
        the report read this line back from the submitted outputs)."""
        shown = "; ".join(f"{name} {value}" for name, value in self.values.items())
        return f"variant of student {self.student!r}: {shown}"


def of(assignment: str, student: str) -> Variant:
    """The variant of ``student`` for ``assignment``: the same on every machine and Python version
    (a hash of the two, not Python's seeded ``hash``)."""
    choices = CHOICES.get(assignment, {})
    values = {}
    for name, options in choices.items():
        if student == WORKED:
            values[name] = options[0]
            continue
        digest = hashlib.sha256(f"{assignment}/{name}/{student}".encode()).digest()
        values[name] = options[1 + int.from_bytes(digest[:8], "big") % (len(options) - 1)]
    return Variant(assignment, student, values)


def valid(student: str) -> bool:
    return bool(_ID.fullmatch(student))


def graded_as(student: str) -> str:
    """The id a submission of ``student`` runs under when graded: theirs, or the worked example's
    for a name that is no id (the canary's ``(canary)``, which runs the instructor's solution)."""
    return student if valid(student) else WORKED


def student_id(ask=input, folder: Path | None = None) -> tuple[str, str]:
    """The student's id and where it came from (``"setting"``, ``"file"``, ``"asked"`` or
    ``"worked"``). Asks at most once: the answer is kept in :data:`ID_FILE`."""
    given = settings.current().student
    if given:
        if not valid(given):
            raise ValueError(f"{settings.STUDENT_VARIABLE}={given!r} is not a student id: {_RULE}")
        return given, "setting"
    kept = (folder or Path.cwd()) / ID_FILE
    if kept.is_file():
        text = kept.read_text().strip()
        if valid(text):
            return text, "file"
    try:
        answer = ask(
            "Your student id, as on the course roster (it picks your own variant of the experiments): "
        )
    except Exception:  # no one to ask: nbclient (StdinNotImplementedError), a script's closed stdin
        return WORKED, "worked"
    answer = (answer or "").strip()
    if not valid(answer):
        raise ValueError(
            f"{answer!r} is not a student id ({_RULE}): run the cell again and type the id the course "
            "roster gives you"
        )
    try:
        kept.write_text(answer + "\n")
    except OSError:
        pass  # a read-only folder: asked again next session
    return answer, "asked"


def mine(assignment: str, ask=input) -> Variant:
    """The setup cell's call: this student's variant of ``assignment``, printed in one line."""
    student, source = student_id(ask)
    chosen = of(assignment, student)
    note = {
        "worked": " (no student id could be asked for here: the worked example's, which the model answers show)",
        "asked": f" (kept in {ID_FILE}; delete that file to type it again)",
    }.get(source, "")
    print(f"Your {chosen.describe()}{note}")
    return chosen
