# expected_score: 30.67
# based_on: correct
# The causal mask is off by one: torch.tril's diagonal is one too high, so every token also sees
# the next one. The mask test fails 6 of its 9 checks (the case of one query after 7 cached tokens
# has no next token to see: 2.67 of 8). The GPT tests (its logits, and its 8 graded training steps)
# and the generation test run its GPT and generate with the course's reference mask and attention,
# so they pass: one mistake costs its own exercise. The visible checks of those exercises use its own
# mask and fail (they carry no points): a model trained with it would look wonderful (each position
# copies the next character it can see) and write nonsense, which has no next token to copy.
# 30.67 of 36.
# %% causal_attention
def decoder_mask(attention_mask, query_length, past_length=0):
    total = past_length + query_length
    ones = torch.ones(query_length, total, dtype=torch.bool, device=attention_mask.device)
    causal = torch.tril(ones, diagonal=past_length + 1)   # off by one: also the next token
    keys = attention_mask.to(torch.bool)
    return causal.unsqueeze(0).unsqueeze(0) & keys.view(keys.shape[0], 1, 1, total)


def attend(q, k, v, mask=None):
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) * q.shape[-1] ** -0.5
    if mask is not None:
        blocked = torch.zeros_like(scores).masked_fill(~mask, torch.finfo(scores.dtype).min)
        scores = scores + blocked
    weights = torch.softmax(scores, dim=-1)
    return torch.einsum("bhqk,bhkd->bhqd", weights, v), weights
