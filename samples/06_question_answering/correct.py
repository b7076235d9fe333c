# expected_score: 22
# Every exercise right, written with loops where the solution uses tensor tricks (the same spans,
# the same tie rule, the same scores), and free-text answers that quote its own run.
# %% best_span
def best_span(start_logits, end_logits, context_mask, max_answer_len=15):
    mask = torch.as_tensor(context_mask).bool()
    keep = mask.clone()
    keep[0] = True
    start_lp = torch.log_softmax(torch.where(keep, torch.as_tensor(start_logits), torch.tensor(float("-inf"))), dim=0)
    end_lp = torch.log_softmax(torch.where(keep, torch.as_tensor(end_logits), torch.tensor(float("-inf"))), dim=0)
    best = None
    for s in mask.nonzero()[:, 0].tolist():
        for e in range(s, min(s + max_answer_len, len(mask))):
            if not mask[e]:
                continue
            score = (start_lp[s] + end_lp[e]).item()
            if best is None or score > best[2]:
                best = (s, e, score)
    return best[0], best[1], best[2], (start_lp[0] + end_lp[0]).item()
# %% answer_text
def answer_text(context, offsets, start, end):
    first = int(offsets[start][0])
    last = int(offsets[end][1])
    return context[first:last], first, last
# %% encode_windows
def encode_windows(tokenizer, question, context, max_length=384, stride=128):
    enc = tokenizer(question, context, max_length=max_length, truncation="only_second", stride=stride,
                    return_overflowing_tokens=True, return_offsets_mapping=True, padding="longest",
                    return_tensors="pt")
    context_mask = torch.zeros_like(enc["input_ids"], dtype=torch.bool)
    for window in range(len(enc["input_ids"])):
        for position, sid in enumerate(enc.sequence_ids(window)):
            context_mask[window, position] = sid == 1
    return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"], "context_mask": context_mask,
            "offsets": enc["offset_mapping"]}
# %% best_answer
def best_answer(start_logits, end_logits, context_mask, offsets, context, max_answer_len=15, allow_null=False):
    results = [best_span(start_logits[w], end_logits[w], context_mask[w], max_answer_len)
               for w in range(len(start_logits))]
    window = max(range(len(results)), key=lambda w: (results[w][2], -w))   # the earlier window on a tie
    s, e, score, _ = results[window]
    null = min(r[3] for r in results)
    if allow_null and null > score:
        return {"answer": "", "start": 0, "end": 0, "score": null}
    text, first, last = answer_text(context, offsets[window], s, e)
    return {"answer": text, "start": first, "end": last, "score": score}
# %% answer_attention
def answer_attention(attentions, start, end, question_mask):
    layers = []
    keep = torch.as_tensor(question_mask).bool()
    for layer in attentions:
        averaged = layer[0].mean(dim=0)               # (seq, seq)
        layers.append(averaged[start:end + 1][:, keep])
    return torch.stack(layers)
# %% q_attention
Offline model. (a) The answer ("One skilled in circumvention of the law", the wrong entry) gives the question the most attention in layer 5: 0.20 per answer token in total, and most of it, 0.16, goes to "rum", the word the question asks about. In the other layers the question gets only 0.03 to 0.09, most of it also on "rum". (b) Yes, the last layer, which feeds qa_outputs, reads "rum" most. But this only shows that the answer tokens mix in the value vector of "rum"; the value might be small, and the answer it picked is another entry's definition, so reading the word did not make it right. To test whether it needs the word I would ask about the other entry ("What is lawyer?") with the same context and see if the answer moves, or replace "rum" by a word that is not in the context and see whether the null score wins.
# %% q_windows
Offline, 8 entries in 3 windows of 64 tokens with stride 16. (a) The expected answer "Crowned with leaves of the laurel" is cut by window 1 (characters 183..434): its best span is "Crowned with" (log p -3.88), the window ends inside the definition. Window 2 (350..549) has the whole answer but prefers the definition before it, "A disease incurred by exposure to the prosperity of a friend" (-2.54), and that won over window 0's "A spiritual pickle preserving the body" (-4.13), so the model answered wrongly. (b) The windows overlap so that an answer cut at the end of one window is whole in the next, if the stride is at least as long as the answer; here it was whole in window 2, and the mistake is the model's, not the windows'. The null score is the smallest over the windows because a window that does not contain the answer should say "no answer" for itself, not for the whole context; the most confident window decides. The pipeline adds the probabilities of windows whose best spans are the same text, best_answer keeps the best one; in my check this happened 2 times out of 48, for texts that were not the answer, so all 48 answers agree, but adding could make a text found twice beat a better single span.
