# expected_score: 19
# Fully correct, written differently from the reference: the projections sliced out of in_proj_weight
# with reshape/permute heads, n-gram counts with np.add.at, the encoder-decoder's positions sliced
# from the embedding's weight.
# All automatic points (19 of 25; the 6 points of the questions are graded by hand).
# %% cross_attention
def multi_head_attention(query, key_value, in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias,
                         n_heads, mask=None):
    d_model = query.shape[-1]
    def heads(x, rows):
        projected = x @ in_proj_weight[rows].T + in_proj_bias[rows]
        return projected.reshape(x.shape[0], x.shape[1], n_heads, d_model // n_heads).permute(0, 2, 1, 3)
    q = heads(query, slice(0, d_model))
    k = heads(key_value, slice(d_model, 2 * d_model))
    v = heads(key_value, slice(2 * d_model, 3 * d_model))
    out, weights = attend(q, k, v, mask)
    out = out.permute(0, 2, 1, 3).reshape(query.shape[0], query.shape[1], d_model)
    return out @ out_proj_weight.T + out_proj_bias, weights


def decoder_layer(x, memory, params, n_heads, x_padding, memory_padding):
    def ln(value, i):
        return F.layer_norm(value, (value.shape[-1],), params[f"norm{i}.weight"], params[f"norm{i}.bias"], eps=1e-5)
    sa = [params[f"self_attn.{n}"] for n in ("in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias")]
    ca = [params[f"multihead_attn.{n}"] for n in ("in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias")]
    h = ln(x + multi_head_attention(x, x, *sa, n_heads, decoder_mask(x_padding, x.shape[1]))[0], 1)
    crossed, cross_weights = multi_head_attention(h, memory, *ca, n_heads, memory_padding[:, None, None, :] == 1)
    h = ln(h + crossed, 2)
    ff = torch.relu(h @ params["linear1.weight"].T + params["linear1.bias"]) @ params["linear2.weight"].T + params["linear2.bias"]
    return ln(h + ff, 3), cross_weights
# %% language_model
def lm_loss(logits, ids):
    predicted = logits[:, :-1, :]
    targets = ids[:, 1:]
    return F.cross_entropy(predicted.transpose(1, 2), targets)


def ngram_perplexity(train_ids, val_ids, vocab_size, order):
    train, val = train_ids.numpy(), val_ids.numpy()
    if order == 1:
        counts = np.ones(vocab_size)
        np.add.at(counts, train, 1)
        log_p = np.log(counts[val[1:]] / counts.sum())
    else:
        counts = np.ones((vocab_size, vocab_size))
        np.add.at(counts, (train[:-1], train[1:]), 1)
        log_p = np.log(counts[val[:-1], val[1:]] / counts[val[:-1]].sum(axis=1))
    return float(np.exp(-log_p.mean()))
# %% seq2seq
class Seq2Seq(nn.Module):
    """A small encoder-decoder transformer: nn.TransformerEncoder, then your decoder_layer per decoder layer."""

    def __init__(self, vocab_size, d_model=64, n_heads=4, n_layers=2, max_length=16):
        super().__init__()
        self.n_heads = n_heads
        self.embed = nn.Embedding(vocab_size, d_model)           # shared by source and target tokens
        self.positions = nn.Embedding(max_length, d_model)       # learned, as in GPT
        encoder_layer = nn.TransformerEncoderLayer(d_model, n_heads, 4 * d_model, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(encoder_layer, n_layers, enable_nested_tensor=False)
        self.decoder = nn.ModuleList([nn.TransformerDecoderLayer(d_model, n_heads, 4 * d_model, dropout=0.0,
                                                                 batch_first=True) for _ in range(n_layers)])
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, source, source_padding, target_in, target_padding):
        src = self.embed(source) + self.positions.weight[:source.size(1)]
        ignore = ~source_padding.bool()                 # PyTorch's convention: True = leave out
        memory = self.encoder(src, src_key_padding_mask=ignore)
        h = self.embed(target_in) + self.positions.weight[:target_in.size(1)]
        maps = []
        for block in self.decoder:
            weights = {name: p for name, p in block.named_parameters()}
            h, attn = decoder_layer(h, memory, weights, self.n_heads, target_padding, source_padding)
            maps.append(attn)
        return self.head(h), maps
# %% q_temperature
At temperature 0 my model wrote "LOVE, n.  A the the the sore of the sore of the sore": it loops. At 0.5 the words are mostly real ("the man of the state"), at 1.5 it is mostly gibberish ("Lqx, vhe'z"). Dividing logits by T < 1 makes the distribution peakier (lower entropy), T > 1 flattens it so rare characters are drawn.
# %% q_pattern
Above the diagonal is zero because of the causal mask. Head 1 of the last block attends almost only to the previous character; head 3 attends to the last space, the start of the word. Knowing the previous characters and where the word started is what predicts the next letter.
# %% q_cross
In my layer 1 map each output digit looks at the source digit n-1-i: a clean anti-diagonal from the last source digit (for the first output) to the first; layer 0 is blurred along the same line. The padding columns are exactly 0 because of the memory padding mask, and the <eos> row looks at the first source digit. Every digit token is the same wherever it stands, so the only way to copy the right one is to attend by position: output i must find the source position n-1-i, and cross-attention is where the decoder reads the source.
