# expected_score: 20
# expected_status: flagged
# based_on: correct
# A stub GPT that computes nothing and reads its answers off the text it is scored on: forward()
# predicts the token after each position by looking it up, in its own input during training (so the
# training loss falls to 0 and nothing is learned) and, for the last position, in any longer window
# a caller's frame holds (`sys._getframe`). The held-out test used to score each character from its
# prefix while the full window sat in the caller's frame, so this stub earned its 6 points. Now the
# grader's weights go into a fresh GPT of this class first and must give the grader's logits (they
# cannot: 0 of 6, whatever follows), and the test no longer scores a trained model at all: it trains
# its own GPT of this class for 8 steps and compares the losses and log-probabilities with the
# solution's (they fail too). The GPT test fails too (10), exercise 3 runs the course's reference GPT
# (its points stay): 20 of 36.
# %% gpt_model
import sys


class Block(nn.Module):
    '''A GPT-2 block (never used: the stub below looks its answers up).'''

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
        return x, past, None


def _window_around(ids):
    """A tensor in some caller's frame (locals, then globals) that starts with `ids` and goes on."""
    frame = sys._getframe(2)
    while frame is not None:
        for value in list(frame.f_locals.values()) + list(frame.f_globals.values()):
            if (torch.is_tensor(value) and value.dim() == 2 and value.shape[0] == ids.shape[0]
                    and value.shape[1] > ids.shape[1] and value.dtype == ids.dtype
                    and torch.equal(value[:, :ids.shape[1]].to(ids.device), ids)):
                return value.to(ids.device)
        frame = frame.f_back
    return None


class GPT(nn.Module):
    '''Not a language model: it predicts each next token by reading it.'''

    def __init__(self, vocab_size, n_positions, d_model, n_heads, n_layers):
        super().__init__()
        self.n_positions = n_positions
        self.wte = nn.Embedding(vocab_size, d_model)
        self.wpe = nn.Embedding(n_positions, d_model)
        self.blocks = nn.ModuleList([Block(d_model, n_heads) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(d_model)
        self.attentions = []

    def forward(self, ids, attention_mask=None, past=None):
        vocab = self.wte.num_embeddings
        window = _window_around(ids)
        following = window[:, 1:ids.shape[1] + 1] if window is not None else torch.cat([ids[:, 1:], ids[:, -1:]], 1)
        logits = F.one_hot(following, vocab).float() * 30.0 + 0.0 * self.wte.weight.sum()  # "trainable"
        self.attentions = []
        return logits, [(None, None)] * len(self.blocks)
