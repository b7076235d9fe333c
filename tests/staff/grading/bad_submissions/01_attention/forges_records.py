# expected_score: 21.2
# expected_status: flagged
# based_on: correct_loops
# The wrong softmax of wrong_softmax.py, plus forged records: a thread waits for the folder the
# grader opens while a test cell runs and plants symbolic links in it to the hidden fixture
# files, hoping the judge (which can read them) takes their expected outputs for the student's.
# The grader takes no link out of the sandbox: the score is its trick-free twin's (21.2),
# flagged for naming the records.
# %% softmax
import os
import threading
import time


def _plant():
    door = os.environ.get("COURSE_RECORDS", "/nonexistent")
    hidden = os.path.join(os.environ.get("COURSE_FIXTURES", "/"), "hidden", "01_attention")
    names = ["softmax", "self_attention", "multihead", "positional_encoding", "masked", "permutation"]
    for i in range(400):
        try:
            os.symlink(os.path.join(hidden, names[i % len(names)] + ".safetensors"),
                       os.path.join(door, f"planted-{i:04d}.safetensors"))
        except OSError:
            time.sleep(0.02)


threading.Thread(target=_plant, daemon=True).start()


def softmax(x, axis=-1):
    return np.exp(x - x.max(axis=axis, keepdims=True))
