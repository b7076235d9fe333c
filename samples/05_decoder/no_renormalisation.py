# expected_score: 33.22
# based_on: correct
# Top-k and top-p drop tokens from the softmax's probabilities without renormalising what is
# left, so a filtered row sums to less than 1: 5 of the sampling test's 9 checks fail (2.22 of 5).
# torch.multinomial quietly normalises its weights, so greedy text and top-k-only samples are
# still right (the visible generation check, which carries no points, passes); its top-p after
# top-k would keep too many tokens, but the hidden generation test runs its generate with the
# course's reference next_token_distribution, so that slip is not charged twice: 33.22 of 36.
# %% sampling
def next_token_distribution(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature == 0:
        greedy = torch.zeros_like(logits)
        greedy[torch.arange(logits.shape[0]), logits.argmax(-1)] = 1.0
        return greedy
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_k:
        threshold = torch.topk(probs, min(top_k, probs.shape[-1])).values[:, -1:]
        probs = torch.where(probs < threshold, torch.zeros_like(probs), probs)
    if top_p:
        ranked, order = torch.sort(probs, dim=-1, descending=True)
        drop = ranked.cumsum(-1) - ranked >= top_p
        probs = probs.masked_fill(drop.scatter(1, order, drop), 0.0)
    return probs                           # not renormalised: rows no longer sum to 1
