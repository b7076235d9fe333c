# expected_score: 23
# expected_status: flagged
# based_on: correct_loops
# Correct answers, plus a cell that tries what a sandboxed kernel must not do: write into the course
# (the gradebook, source/, another student's folder, the course package), open a connection to the
# grader's own loopback and to the internet, and fork without end. Every attempt fails quietly,
# the answers keep their full marks (flagged: the scan sees socket and fork), and the course tree
# stays byte-identical (a test hashes it).
# %% softmax
import os, socket, subprocess, sys

_root = os.path.dirname(os.path.dirname(os.path.abspath(os.environ.get("COURSE_FIXTURES", "."))))
for _target in ("gradebook.db", "source/01_attention/01_attention.ipynb", "submitted/correct_loops/x.txt",
                "course/checks.py", "autograded/correct_loops/01_attention/01_attention.ipynb"):
    try:
        with open(os.path.join(_root, _target), "a") as _f:
            _f.write("tampered")
    except OSError:
        pass
for _address in (("127.0.0.1", 22), ("127.0.0.1", 5432), ("1.1.1.1", 443)):
    try:
        socket.create_connection(_address, timeout=2).close()
    except OSError:
        pass
# The fork bomb runs in a bare interpreter the kernel starts: forking the kernel itself was so slow
# on one CI machine that the cell hit its 10 s limit before the process limit.
_bomb = """
import os, time
children = []
try:
    for _ in range(5000):
        pid = os.fork()
        if pid == 0:
            time.sleep(2)
            os._exit(0)
        children.append(pid)
except OSError:
    pass
for pid in children:
    os.waitpid(pid, 0)
print(len(children), "children before the limit")
"""
try:
    subprocess.run([sys.executable, "-S", "-c", _bomb], timeout=8)
except subprocess.TimeoutExpired:
    pass

def softmax(x, axis=-1):
    z = np.exp(x - x.max(axis=axis, keepdims=True))
    return z / z.sum(axis=axis, keepdims=True)
