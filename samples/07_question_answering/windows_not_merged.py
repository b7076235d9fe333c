# expected_score: 17.14
# based_on: correct
# Decodes only the first window: an answer in a later window is never found, and the null score
# is the first window's, not the smallest. Exercise 4 keeps 11 of its 21 checks (3.14 of 6
# points): the one-window case, the tie whose winner is window 0, the model's long context whose
# best span is in window 0, and the no-answer verdict (not its null score).
# %% best_answer
def best_answer(start_logits, end_logits, context_mask, offsets, context, max_answer_len=15, allow_null=False):
    s, e, score, null = best_span(start_logits[0], end_logits[0], context_mask[0], max_answer_len)
    if allow_null and null > score:
        return {"answer": "", "start": 0, "end": 0, "score": null}
    text, first, last = answer_text(context, offsets[0], s, e)
    return {"answer": text, "start": first, "end": last, "score": score}
