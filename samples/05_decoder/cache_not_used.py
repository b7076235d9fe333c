# expected_score: 33.67
# based_on: correct
# generate() accepts use_cache but never uses it: every step runs the model on the whole text so
# far. The tokens are right (greedy matches GPT-2, samples match), so it looks finished, but the
# visible check counts the tokens given to the model per call (5, 1, 1, ... with a cache) and the
# hidden test does too: 2 of its 6 checks fail, 2.33 of 7 points lost (33.67 of 36). Its speed-up
# plot stays flat at 1x.
# %% generate
@torch.no_grad()
def generate(model, ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None, use_cache=True):
    if ids.size(1) + max_new_tokens > model.n_positions:
        raise ValueError(f"at most {model.n_positions} tokens fit the model")
    model.eval()
    tokens = ids
    for _ in range(max_new_tokens):
        logits, _ = model(tokens)          # the cache it returns is thrown away
        probs = next_token_distribution(logits[:, -1, :], temperature=temperature, top_k=top_k, top_p=top_p)
        if temperature == 0:
            new = probs.argmax(dim=1).unsqueeze(1)
        else:
            new = torch.multinomial(probs, 1, generator=generator)
        tokens = torch.cat((tokens, new), dim=1)
    return tokens
