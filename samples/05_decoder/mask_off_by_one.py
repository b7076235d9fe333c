# expected_score: 17
# based_on: correct
# The causal mask is off by one: torch.tril's diagonal is one too high, so every token also sees
# the next one. The attention, decoder-layer and GPT tests fail (the model no longer matches
# GPT-2; 8 + 8 + 10 points), and so does the visible generation check (sampling with and without
# the cache now differs: recomputed prefixes leak, cached ones do not), which carries no points.
# Training looks wonderful (the loss falls below 0.1: the model copies the next character it can
# see), but the perplexity test predicts each character from its prefix alone, where there is
# nothing to copy: about 1,000, and it fails (6). Sampling (5), the loss and baselines (5) and the
# hidden generation test (7: the last position never has a next token to peek at, so these small
# models still pick the expected tokens) stand: 17 of 49.
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
