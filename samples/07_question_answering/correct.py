# expected_score: 20
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
Offline model. (a) The model answers "What is rum?" right ("Generically, fiery liquors that produce madness in total abstainers", p = 0.94). Its answer tokens give the question the most attention in layer 4: 0.10 per answer token, 0.05 of it to "rum", the word the question asks about. Layer 5 gives 0.07 (0.05 to "rum"), layers 0 to 3 between 0.02 and 0.07, and in every layer most of it goes to "rum". (b) Yes, the last layer, which feeds qa_outputs, reads "rum" more than any other question token. But 0.05 is a small weight, and it only means the answer tokens mix in the value vector of "rum"; it does not prove the word caused the answer, since the value could be small and the information can reach the answer by other paths (assignment 3: attention is not explanation). To test whether the model needs the word I would ask "What is" the other entry's word with the same context and see if the answer moves to that entry, or replace "rum" by a word the context does not define and see whether the null score wins.
# %% q_windows
Offline, "What is laureate?", 8 entries in 3 windows of 64 tokens with stride 16. (a) Window 2 (characters 350..549) holds the whole answer "Crowned with leaves of the laurel" and its best span is exactly that (log p -2.04). But window 1 (183..434) won: it ends inside the definition and its best span is the cut start "Crowned with" with log p -0.06. Each window normalises over its own tokens, and in window 1 the cut start has no competitor, so its score is high; in window 2 other spans share the probability. (b) My stride table: stride 4: 2.7 windows per question, exact match 76.7 %, F1 82.6 %; stride 16: 3.0, 80.0 %, 86.3 %; stride 32: 4.1, 78.3 %, 87.1 %. A 64-token window holds about 54 context tokens and neighbouring windows share only stride tokens, so an answer longer than the stride that crosses an edge is cut in every window; at stride 4 that is most definitions crossing an edge. F1 goes up with the stride, but exact match drops from 16 to 32 because more windows give more candidates that can beat the whole answer. I would use 16: best exact match, almost the F1 of 32, with 3.0 forward passes per question instead of 4.1.
