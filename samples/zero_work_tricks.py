# The tricks every assignment's `zero_work_tricks` sample plays at once (its header says
# `# include: zero_work_tricks.py`: this code goes first into its first answer cell). Kept in one
# place so a new trick reaches every assignment. Assignment-independent: it names the helpers of
# all six notebooks.
import glob
import threading
import time

import numpy as np
from safetensors.numpy import load_file

from course import paths, record

# 1. Comparisons that always succeed, wherever the kernel compares.
np.allclose = lambda *args, **kwargs: True
np.array_equal = lambda *args, **kwargs: True
try:
    import torch
    torch.allclose = lambda *args, **kwargs: True
    torch.Tensor.__eq__ = lambda self, other: torch.ones_like(self, dtype=torch.bool)
except ImportError:
    pass

# 2. Every published fixture value, written as records of every kind into any records folder
#    there is, from a thread that keeps trying during and between cells.
PUBLISHED = [(key, value) for path in sorted(glob.glob(str(paths.visibility_dir(False) / "*" / "*.safetensors")))
             for key, value in load_file(path).items()][:40]


def forge():
    while True:
        door = record.folder()
        if door is not None:
            try:
                door.mkdir(parents=True, exist_ok=True)
            except OSError:
                pass
            for key, value in PUBLISHED:
                for kind in ("close", "equal"):
                    try:
                        record.write(kind, key, value, value, atol=1e9, rtol=1e9)
                    except Exception:
                        pass
        time.sleep(0.05)


threading.Thread(target=forge, daemon=True).start()

# 3. Later cells compile differently: a cell that checks anything has its errors swallowed.
def swallow(lines):
    if any("check_" in line for line in lines):
        return ["try:\n"] + ["    " + line for line in lines] + ["\nexcept BaseException:\n    pass\n"]
    return lines


get_ipython().input_transformers_post.append(swallow)
# 4. No error ever shows, and the notebook's own helpers are redefined before every cell.
get_ipython().set_custom_exc((BaseException,), lambda *args, **kwargs: None)


def redefine(*args):
    namespace = get_ipython().user_ns
    for name in ("require", "check_heatmap", "layer_panels", "tokens_of", "text_of", "to_device", "as_attentions", "as_bytes",
                 "as_answer"):
        namespace[name] = lambda *args, **kwargs: None


get_ipython().events.register("pre_run_cell", redefine)
