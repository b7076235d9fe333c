# expected_score: 0
# expected_status: disk quota
# based_on: correct_loops
# Fills the grader's disk: 64 MB files, one after another, in the folder of its sandbox the grader
# can see (where its kernel's sockets are), from the first answer cell. Each file stays under the
# file-size limit, so only the worker's watch of that folder stops it: once it holds more than the
# quota, the kernel is killed, the submission gets status `disk quota` and 0, and the rest of the
# batch is graded as if it had not been there (its files are removed with its scratch folder).
# %% softmax
import glob, os, sys
folder = os.path.dirname(sys.argv[sys.argv.index("-f") + 1])  # the kernel's connection file is there
block = b"\0" * (60 * 2**20)
for number in range(1000):
    with open(os.path.join(folder, f"filler-{number}"), "wb") as handle:
        handle.write(block)
