# expected_score: 13
# based_on: correct
# The encoder-decoder of exercise 3 ignores the source padding: the encoder gets no
# src_key_padding_mask and the cross-attention an all-ones memory padding, so the decoder also reads
# the padding's vectors. Its own visible check says so (weights on padded source positions, logits
# that change when the batch is padded more). Its own run still learns to reverse its training
# batches, but on sequences padded wider than any training batch (its visible check) only about 70 %
# of the output tokens and of the alignments are right, below the 95 % and 90 % it asks. The grader's own
# weights in its Seq2Seq give other logits than the solution's on padded sequences (it reads the
# padding), and that alone makes the hidden test pay nothing (6 points; its 8 graded training steps,
# on batches padded less than the unseen sequences it is then compared on, fail too): 13 of 19.
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
        memory = self.encoder(src)                                   # the padding is read like any token
        h = self.embed(target_in) + self.positions.weight[:target_in.size(1)]
        maps = []
        everything = torch.ones_like(source_padding)               # no memory padding mask
        for block in self.decoder:
            weights = {name: p for name, p in block.named_parameters()}
            h, attn = decoder_layer(h, memory, weights, self.n_heads, target_padding, everything)
            maps.append(attn)
        return self.head(h), maps
