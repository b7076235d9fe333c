# expected_score: 36
# Fully correct, written differently from the reference: the mask from torch.tril with an offset,
# attention with torch.einsum and an additive mask, the heads split with reshape/permute, top-p
# with an ascending sort (as transformers does).
# All automatic points (36 of 38; the 2 points of the question are graded by hand).
# %% causal_attention
def decoder_mask(attention_mask, query_length, past_length=0):
    total = past_length + query_length
    ones = torch.ones(query_length, total, dtype=torch.bool, device=attention_mask.device)
    causal = torch.tril(ones, diagonal=past_length)       # row i allows keys up to past_length + i
    keys = attention_mask.to(torch.bool)
    return causal.unsqueeze(0).unsqueeze(0) & keys.view(keys.shape[0], 1, 1, total)


def attend(q, k, v, mask=None):
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) * q.shape[-1] ** -0.5
    if mask is not None:
        blocked = torch.zeros_like(scores).masked_fill(~mask, torch.finfo(scores.dtype).min)
        scores = scores + blocked
    weights = torch.softmax(scores, dim=-1)
    return torch.einsum("bhqk,bhkd->bhqd", weights, v), weights
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
        return F.linear(self.ln_f(x), self.wte.weight), present
# %% sampling
def next_token_distribution(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature == 0:
        greedy = torch.zeros_like(logits)
        greedy[torch.arange(logits.shape[0]), logits.argmax(-1)] = 1.0
        return greedy
    scaled = logits / temperature
    if top_k:
        threshold = torch.topk(scaled, min(top_k, scaled.shape[-1])).values[:, -1:]
        scaled = torch.where(scaled < threshold, torch.full_like(scaled, -float("inf")), scaled)
    if top_p:
        ascending, order = torch.sort(scaled, dim=-1)
        tail = ascending.softmax(-1).cumsum(-1) <= 1 - top_p      # the least likely tokens, up to 1 - p of the mass
        tail[:, -1] = False                                        # always keep the top token
        scaled = scaled.masked_fill(tail.scatter(1, order, tail), -float("inf"))
    return torch.softmax(scaled, dim=-1)
# %% generate
@torch.no_grad()
def generate(model, ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None, use_cache=True):
    if ids.size(1) + max_new_tokens > model.n_positions:
        raise ValueError(f"at most {model.n_positions} tokens fit the model")
    model.eval()
    tokens = ids
    logits, cache = model(ids)
    for step in range(max_new_tokens):
        probs = next_token_distribution(logits[:, -1, :], temperature=temperature, top_k=top_k, top_p=top_p)
        if temperature == 0:
            new = probs.argmax(dim=1).unsqueeze(1)
        else:
            new = torch.multinomial(probs, 1, generator=generator)
        tokens = torch.cat((tokens, new), dim=1)
        if step + 1 < max_new_tokens:
            logits, cache = model(new, past=cache) if use_cache else model(tokens)
    return tokens
# %% q_cache
My speed-up was 1.8x at 32 tokens and 19x at 500. Without the cache every step reprocesses all t tokens, so n tokens cost O(n^2) (attention O(n^3)); with it each step processes one token, O(n) (attention O(n^2)). The cache holds 2 x layers x d_model numbers per token.
