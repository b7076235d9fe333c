# expected_score: 30
# based_on: correct
# A GPT that computes GPT-2 exactly but does not train like it: the output head reads the tied
# embedding through `.data`, which detaches it, so the head's gradient never reaches `wte` (only the
# input side trains it). Every value it computes is right: the GPT and generation tests pass, and
# the parity gate of the training test too. Trained, it would still learn (the embeddings learn from
# the input side), so a test that only scored a trained model's perplexity could pass it. Its
# visible training check says so (the gradient of wte differs from GPT-2's). The
# training test, which trains its GPT for 8 steps from the grader's weights and compares every
# step with the course's solution, sees it from the third step's loss on (the first step runs at
# learning rate 0 and only fills Adam's moments; the second's update shows in the third loss, 460
# times the tolerance) and in every trained log-probability: 0 of 6, 30 of 36.
# %% gpt_model
class Block(nn.Module):
    '''A GPT-2 block: pre-LN causal self-attention and a GELU MLP, each with a residual connection.'''

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.ln_1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln_2 = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.fc_out = nn.Linear(4 * d_model, d_model)

    def forward(self, x, mask, past=None):
        q, k, v = self.qkv(self.ln_1(x)).split(x.shape[-1], dim=-1)
        q, k, v = split_heads(q, self.n_heads), split_heads(k, self.n_heads), split_heads(v, self.n_heads)
        if past is not None:
            past_k, past_v = past
            k = torch.cat((past_k, k), dim=-2)
            v = torch.cat((past_v, v), dim=-2)
        attended, weights = attend(q, k, v, mask)
        x = x + self.proj(merge_heads(attended))
        hidden = self.fc(self.ln_2(x))
        x = x + self.fc_out(0.5 * hidden * (1 + torch.tanh(math.sqrt(2 / math.pi) * (hidden + 0.044715 * hidden ** 3))))
        return x, (k, v), weights


class GPT(nn.Module):
    '''A decoder-only transformer language model with GPT-2's architecture.'''

    def __init__(self, vocab_size, n_positions, d_model, n_heads, n_layers):
        super().__init__()
        self.n_positions = n_positions
        self.wte = nn.Embedding(vocab_size, d_model)
        self.wpe = nn.Embedding(n_positions, d_model)
        self.blocks = nn.ModuleList([Block(d_model, n_heads) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(d_model)
        self.attentions = []
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear):
            nn.init.zeros_(module.bias)

    def forward(self, ids, attention_mask=None, past=None):
        start = past[0][0].size(2) if past else 0
        if attention_mask is None:
            attention_mask = ids.new_ones(ids.shape[0], start + ids.shape[1])
        mask = decoder_mask(attention_mask, ids.shape[1], past_length=start)
        x = self.wte(ids) + self.wpe.weight[start:start + ids.shape[1]]
        present, self.attentions = [], []
        for block, cache in zip(self.blocks, past if past else [None] * len(self.blocks)):
            x, kv, weights = block(x, mask, cache)
            present.append(kv)
            self.attentions.append(weights)
        return F.linear(self.ln_f(x), self.wte.weight.data), present   # the tied head: the embedding matrix
