# expected_score: 19
# expected_status: flagged
# based_on: correct
# Correct, but exercise 1's multi-head attention is PyTorch's own (F.multi_head_attention_forward,
# what nn.MultiheadAttention runs) with the student's mask: every value comes out right, and the
# integrity scan names the call, the cell and the exercise for a TA to decide what it is worth.
# %% cross_attention
def multi_head_attention(query, key_value, in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias,
                         n_heads, mask=None):
    batch, length, d_model = query.shape
    blocked = None
    if mask is not None:  # PyTorch's boolean mask is True where attention is *not* allowed, one per head
        keys = key_value.shape[1]
        allowed = mask.expand(batch, n_heads, length, keys).reshape(batch * n_heads, length, keys)
        blocked = torch.zeros(allowed.shape, dtype=query.dtype).masked_fill(~allowed, torch.finfo(query.dtype).min)
    memory = key_value.transpose(0, 1)
    out, weights = F.multi_head_attention_forward(
        query.transpose(0, 1), memory, memory, d_model, n_heads, in_proj_weight, in_proj_bias, None, None, False,
        0.0, out_proj_weight, out_proj_bias, training=False, need_weights=True, attn_mask=blocked,
        average_attn_weights=False)
    return out.transpose(0, 1), weights


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
