# expected_score: 22
# based_on: correct
# Two slips in section 4: the entropy of the head-averaged map (it averages the heads first, the old
# way, so sharp heads that disagree look diffuse: the visible check says so, the hidden tests fail),
# and the [SEP] share counts only the first [SEP] (tokens.index), so a pair's second [SEP] is
# missed. Partial credit follows each slip: the entropy fails 6 of its 7 hidden checks (3.43 of 4
# points; the one left has a single head), the shares only the [SEP] share of the 3 pairs with two
# [SEP]s (3 of 21 checks, 0.57 of 4 points). The rest is correct; its free-text answers are the
# kind a TA marks wrong.
# %% attention_shares
def attention_shares(avg, tokens):
    cls, sep = tokens.index("[CLS]"), tokens.index("[SEP]")
    return {"cls": avg[:, :, cls].mean(dim=-1),
            "sep": avg[:, :, sep].mean(dim=-1),
            "self": avg.diagonal(dim1=1, dim2=2).mean(dim=-1)}
# %% attention_entropy
def attention_entropy(maps):
    avg = maps.mean(dim=1)                                     # heads averaged first
    return -torch.special.xlogy(avg, avg).sum(dim=-1).mean(dim=-1)
# %% q_layers
The entropy of the head-averaged map is the right one; the per-head value is lower only because of rounding.
# %% q_sep
Because [SEP] contains the meaning of the whole sentence, so the model looks at it.
# %% q_limits
Attention maps show exactly which words the model used for its prediction, so they explain the output.
