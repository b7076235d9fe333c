# expected_score: 20
# expected_status: graded
# based_on: correct_loops
# A memory bomb in the positional-encoding cell: 12 GiB arrays until memory runs out (two would
# exhaust this 24 GiB machine). The grading process's address-space limit turns the first one into
# a MemoryError in that cell instead of taking the machine down. Each array is larger than the
# limit, so the error comes at once: a bomb that first fills the limit in small steps spends
# seconds page-faulting (4.7 s for 2 GiB on an idle machine here) and hit the 10 s cell limit on a
# loaded CI machine, which tests the machine's speed, not the limit.
# %% positional_encoding
hog = [np.ones((40_000, 40_000)) for _ in range(100)]
