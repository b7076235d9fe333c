# expected_score: 0
# Kept the released skeleton: only a comment and a blank line added to two answer cells.
# %% softmax
def softmax(x, axis=-1):
    '''Numerically stable softmax of `x` along `axis` (any number of dimensions).'''
    # YOUR CODE HERE
    # TODO: come back to this

    raise NotImplementedError()
# %% causal_mask
def causal_mask(seq_len):
    '''Boolean (seq_len, seq_len): True where query i may attend to key j, that is j <= i.'''
    # YOUR CODE HERE
    raise NotImplementedError()  # later
