# expected_score: 17
# expected_status: graded
# based_on: correct_loops
# A memory bomb in the positional-encoding cell: the grading process's memory limit turns it
# into a MemoryError in that cell instead of taking the machine down.
# %% positional_encoding
hog = [np.ones(2**27) for _ in range(10**6)]
