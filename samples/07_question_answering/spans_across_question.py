# expected_score: 15.71
# based_on: correct
# Ignores the context mask: every token but [CLS] may start or end an answer and is normalised
# over, so spans run across the question, [SEP] and padding, and every score and null score is
# off. Exercise 1 keeps only the 4 of its 14 checks whose best span happens to lie in the context
# anyway (4/14 of 6 points = 1.71); exercise 4 runs the course's best_span in its place and keeps
# its 6 points.
# %% best_span
def best_span(start_logits, end_logits, context_mask, max_answer_len=15):
    start_lp = torch.log_softmax(torch.as_tensor(start_logits), dim=0)
    end_lp = torch.log_softmax(torch.as_tensor(end_logits), dim=0)
    n = len(start_lp)
    best = None
    for s in range(1, n):
        for e in range(s, min(s + max_answer_len, n)):
            score = (start_lp[s] + end_lp[e]).item()
            if best is None or score > best[2]:
                best = (s, e, score)
    return best[0], best[1], best[2], (start_lp[0] + end_lp[0]).item()
