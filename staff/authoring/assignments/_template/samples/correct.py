# expected_score: 3
# Normalises each row (the last axis), as the exercise asks.
# %% layer_norm
def layer_norm(x, gamma, beta, eps=1e-5):
    centred = x - x.mean(axis=-1, keepdims=True)
    return centred / np.sqrt((centred**2).mean(axis=-1, keepdims=True) + eps) * gamma + beta
# %% q_rows
Means 0, 0, 0; stds 1.0, 1.0 and 0.9973: eps is added to the variance, and the third row's variance
(0.0019) is small enough for it to show. Normalising columns would centre each feature over the three
tokens instead, and the rows would keep their very different means.
