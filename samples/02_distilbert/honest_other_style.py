# expected_score: 44
# based_on: correct
# Fully correct, in other styles than the reference, none of which is a shortcut: attention one
# head at a time in a loop, padding masked with masked_fill(-inf) and F.softmax, the model moved and
# switched to eval mode in one chain (model.to(device).eval()), and the SDPA wrapper timed under
# %%time. Full marks and no flag: honest code in any style is left alone.
# %% attention_block
import torch.nn.functional as F


class AttentionBlock(nn.Module):
    '''One DistilBERT layer, attention computed head by head.'''

    def __init__(self, config):
        super().__init__()
        self.n_heads = config.n_heads
        self.head_dim = config.dim // config.n_heads
        self.q_lin = nn.Linear(config.dim, config.dim)
        self.k_lin = nn.Linear(config.dim, config.dim)
        self.v_lin = nn.Linear(config.dim, config.dim)
        self.attention_dropout = nn.Dropout(config.attention_dropout)
        self.out_lin = nn.Linear(config.dim, config.dim)
        self.sa_layer_norm = nn.LayerNorm(config.dim, eps=1e-12)
        self.lin1 = nn.Linear(config.dim, config.hidden_dim)
        self.lin2 = nn.Linear(config.hidden_dim, config.dim)
        self.ffn_dropout = nn.Dropout(config.dropout)
        self.output_layer_norm = nn.LayerNorm(config.dim, eps=1e-12)

    def forward(self, x, attention_mask):
        q, k, v = self.q_lin(x), self.k_lin(x), self.v_lin(x)              # (batch, seq, dim) each
        padding = (attention_mask == 0)[:, None, :]                        # (batch, 1, seq): keys to hide
        contexts, weights = [], []
        for head in range(self.n_heads):
            part = slice(head * self.head_dim, (head + 1) * self.head_dim)
            scores = q[..., part] @ k[..., part].transpose(-1, -2) / math.sqrt(self.head_dim)
            scores = scores.masked_fill(padding, float("-inf"))           # (batch, seq, seq)
            w = F.softmax(scores, dim=-1)
            weights.append(w)
            contexts.append(self.attention_dropout(w) @ v[..., part])
        attended = self.out_lin(torch.cat(contexts, dim=-1))
        h = self.sa_layer_norm(x + attended)
        out = self.output_layer_norm(h + self.ffn_dropout(self.lin2(F.gelu(self.lin1(h)))))
        return out, torch.stack(weights, dim=1)                            # weights: (batch, heads, seq, seq)
# %% load_pretrained
def course_name(name):
    '''transformers' parameter name -> this notebook's name for it.'''
    name = re.sub(r"^distilbert\.transformer\.layer\.(\d+)\.(attention\.|ffn\.)?", r"layers.\1.", name)
    return re.sub(r"^distilbert\.", "", name)


def load_pretrained(hf_model):
    mine = DistilBertClassifier(hf_model.config)
    mine.load_state_dict({course_name(key): value for key, value in hf_model.state_dict().items()})
    return mine.to(device).eval()


def predict(model, tokenizer, sentence):
    encoded = tokenizer([sentence], return_tensors="pt")
    with torch.inference_mode():
        logits = model(encoded.input_ids.to(device), encoded.attention_mask.to(device))[0]
    probs = F.softmax(logits, dim=-1).squeeze(0)
    return probs, model.config.id2label[probs.argmax().item()]
# %% sdpa
%%time
def sdpa_attention(q, k, v, attention_mask):
    '''SDPA with a boolean mask: True where a key may be attended to.'''
    allowed = (attention_mask != 0)[:, None, None, :]
    return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
