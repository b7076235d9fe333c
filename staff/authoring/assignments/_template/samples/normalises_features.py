# expected_score: 0
# Normalises each feature over the tokens (axis 0, batch normalisation's axis) instead of each token:
# right only where the rows happen to agree, so the visible check and every hidden case fail.
# %% layer_norm
def layer_norm(x, gamma, beta, eps=1e-5):
    mean, variance = x.mean(axis=0, keepdims=True), x.var(axis=0, keepdims=True)
    return (x - mean) / np.sqrt(variance + eps) * gamma + beta
