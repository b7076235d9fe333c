# expected_score: 13
# based_on: correct
# The encoder-decoder of exercise 3 does not learn: forward() reverses the source by indexing it and
# draws a perfect anti-diagonal as its cross-attention, with its parameters multiplied by 0 so the
# given training loop runs. Every answer and every alignment the grader counted used to be right (6
# points for a model that learned nothing). Now the grader first loads weights of its own into a
# fresh Seq2Seq of this class and compares its logits and cross-attention with what the course's
# solution computes with them: they do not match, the answers do not come from the parameters, and
# the test pays nothing (6), before its training steps, which fail as well (nothing trains): 13 of 19.
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
        batch, length = target_in.shape
        digits = source_padding.sum(1, keepdim=True)                       # (batch, 1)
        position = torch.arange(length, device=source.device)[None]      # output position i
        copies = digits - 1 - position                                   # ... copies source digit n - 1 - i
        answer = source.gather(1, copies.clamp(min=0, max=source.shape[1] - 1))
        answer = torch.where(position < digits, answer, torch.full_like(answer, EOS))
        logits = F.one_hot(answer, self.head.out_features).float() * 20.0
        logits = logits + 0.0 * sum(p.sum() for p in self.parameters())  # the loss has a graph to train
        look = F.one_hot(copies.clamp(min=0, max=source.shape[1] - 1), source.shape[1]).float()
        look = look * source_padding[:, None, :]
        look = look + (look.sum(-1, keepdim=True) == 0) * source_padding[:, None, :] / digits[:, None, :]
        cross = look[:, None].expand(batch, self.n_heads, length, source.shape[1])
        return logits, [cross for _ in self.decoder]
