# expected_score: 20
# expected_status: graded
# based_on: correct_loops
# sys.exit() in the softmax cell: IPython turns it into an error in that cell; softmax is
# undefined, so its own 3 points are lost; the exercises built on it are graded with the course's
# softmax in its place, and pass.
# %% softmax
import sys
sys.exit("done for today")
