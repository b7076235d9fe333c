# expected_score: 3
# expected_status: graded
# based_on: correct_loops
# sys.exit() in the softmax cell: IPython turns it into an error in that cell; softmax is
# undefined, so everything built on it fails; positional encoding still passes.
# %% softmax
import sys
sys.exit("done for today")
