# expected_score: 44
# expected_status: flagged
# based_on: correct
# Correct values, but the attention block's attention is PyTorch's own multi-head attention
# function, reached through a course module (course.models.torch is torch) inside a %%capture cell
# magic: the scan reads the magic's body as code and resolves the path, and names the call.
# %% attention_block
%%capture
import course.models

F = course.models.torch.nn.functional


class AttentionBlock(nn.Module):
    '''One DistilBERT layer, its attention handed to PyTorch.'''

    def __init__(self, config):
        super().__init__()
        self.n_heads = config.n_heads
        for name in ("q_lin", "k_lin", "v_lin", "out_lin"):
            setattr(self, name, nn.Linear(config.dim, config.dim))
        self.sa_layer_norm = nn.LayerNorm(config.dim, eps=1e-12)
        self.lin1 = nn.Linear(config.dim, config.hidden_dim)
        self.lin2 = nn.Linear(config.hidden_dim, config.dim)
        self.output_layer_norm = nn.LayerNorm(config.dim, eps=1e-12)

    def forward(self, x, attention_mask):
        t = x.transpose(0, 1)
        attended, weights = F.multi_head_attention_forward(
            t, t, t, x.shape[-1], self.n_heads, None, torch.cat([self.q_lin.bias, self.k_lin.bias, self.v_lin.bias]),
            None, None, False, 0.0, self.out_lin.weight, self.out_lin.bias, training=False,
            key_padding_mask=torch.as_tensor(attention_mask, device=x.device) == 0, need_weights=True,
            use_separate_proj_weight=True, q_proj_weight=self.q_lin.weight, k_proj_weight=self.k_lin.weight,
            v_proj_weight=self.v_lin.weight, average_attn_weights=False)
        h = self.sa_layer_norm(x + attended.transpose(0, 1))
        return self.output_layer_norm(h + self.lin2(F.gelu(self.lin1(h)))), weights
