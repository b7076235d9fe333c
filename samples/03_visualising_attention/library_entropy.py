# expected_score: 26
# expected_status: flagged
# based_on: correct
# Correct, but exercise 4's entropy is PyTorch's (torch.distributions.Categorical(...).entropy()),
# not the student's own sum of -p log p: the values are right, and the integrity scan names the
# call, the cell and the exercise for a TA to decide what it is worth.
# %% attention_entropy
def attention_entropy(maps):
    per_head = torch.distributions.Categorical(probs=maps).entropy().mean(dim=-1)   # (n_layers, n_heads)
    return per_head.mean(dim=-1)
