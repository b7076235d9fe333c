# expected_score: 13
# based_on: correct
# Exercise 3 not written as asked: Seq2Seq's decoder runs each nn.TransformerDecoderLayer the given
# code builds (PyTorch's own layer) for its output, and the student's multi_head_attention only to
# report the cross-attention weights. Every value comes out right, but the layers only hold the
# weights in the grader's model (running one raises), so the parity check fails and exercise 3's
# test pays nothing: 13 of 19.
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
        def embed(tokens):
            return self.embed(tokens) + self.positions(torch.arange(tokens.shape[1], device=tokens.device))

        memory = self.encoder(embed(source), src_key_padding_mask=source_padding == 0)
        x, cross_attentions = embed(target_in), []
        causal = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool, device=x.device).triu(1)
        for layer in self.decoder:
            params = dict(layer.named_parameters())

            def attention(prefix, inputs, mask):
                return multi_head_attention(x, inputs, params[f"{prefix}.in_proj_weight"],
                                            params[f"{prefix}.in_proj_bias"], params[f"{prefix}.out_proj.weight"],
                                            params[f"{prefix}.out_proj.bias"], self.n_heads, mask)

            attended, _ = attention("self_attn", x, decoder_mask(target_padding, x.shape[1]))
            x_norm = F.layer_norm(x + attended, x.shape[-1:], params["norm1.weight"], params["norm1.bias"], 1e-5)
            _, weights = multi_head_attention(x_norm, memory, params["multihead_attn.in_proj_weight"],
                                              params["multihead_attn.in_proj_bias"],
                                              params["multihead_attn.out_proj.weight"],
                                              params["multihead_attn.out_proj.bias"], self.n_heads,
                                              source_padding.bool()[:, None, None, :])
            x = layer(x, memory, tgt_mask=causal, tgt_is_causal=True, tgt_key_padding_mask=target_padding == 0,
                      memory_key_padding_mask=source_padding == 0)  # PyTorch's layer computes the output
            cross_attentions.append(weights)
        return self.head(x), cross_attentions
