# expected_score: 37.67
# based_on: correct
# The causal mask is off by one: torch.tril's diagonal is one too high, so every token also sees
# the next one. The mask test fails 6 of its 9 checks (the case of one query after 7 cached tokens
# has no next token to see: 2.67 of 8). The decoder-layer, GPT and generation tests run its
# decoder_layer, GPT and generate with the course's reference mask and attention, so they pass:
# one mistake costs its own exercise. The visible checks of those exercises use its own mask and
# fail (they carry no points). Its own training run does use its mask and looks wonderful (the loss
# falls below 0.1: the model copies the next character it can see), but the LM training test fails
# (6): its GPT, given the grader's weights, computes other logits than GPT-2 (its own mask lets each
# token see the next), and the 8 training steps the test then runs give other losses (each position
# sees the character it predicts) and other log-probabilities: the model is the student's own and
# really broken. The encoder-decoder of section 6 goes through the same decoder_mask: in its own run
# teacher forcing lets each position see the answer token it must predict, the loss falls to 0.001,
# and greedy decoding, which has no next token to copy, gets about 12 % of the tokens right; with the
# grader's weights its Seq2Seq computes other logits as well, and so do its graded training steps:
# its hidden test fails too (6). 37.67 of 55.
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
