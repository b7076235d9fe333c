# expected_score: 0
# expected_status: flagged
# based_on: correct_loops
# The wrong softmax of wrong_softmax.py, plus forged records: symbolic links, in the folder the
# judge reads, to the hidden fixture files, hoping the judge (which can read them) takes their
# expected outputs for the student's. The judge opens no link: every judged cell fails, flagged.
# %% softmax
import os
_records = os.environ.get("COURSE_RECORDS", "/nonexistent")
os.makedirs(_records, exist_ok=True)
for _i, _name in enumerate(["softmax", "self_attention", "multihead", "positional_encoding", "masked", "permutation"] * 20):
    try:
        os.symlink(os.path.join(os.environ.get("COURSE_FIXTURES", "/"), "hidden", "01_attention", _name + ".safetensors"),
                   os.path.join(_records, f"{_i:06d}-1.safetensors"))
    except OSError:
        pass

def softmax(x, axis=-1):
    return np.exp(x - x.max(axis=axis, keepdims=True))
