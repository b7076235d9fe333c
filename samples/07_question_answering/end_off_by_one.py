# expected_score: 17
# based_on: correct
# Treats the end token as exclusive, as in a Python slice: the answer stops at the end of token
# end - 1, so its last token (or, for a one-token span, the whole answer) is lost. Only exercise 2
# tests answer_text: its 3 points are lost; exercise 4 runs the course's answer_text in its place.
# %% answer_text
def answer_text(context, offsets, start, end):
    first = int(offsets[start][0])
    last = int(offsets[end - 1][1])
    return context[first:last], first, last
