# expected_score: 20
# expected_status: flagged
# based_on: correct
# Correct, but exercise 1's span search is transformers' own (decode_spans, from its document
# question-answering pipeline) on the student's probabilities: the spans come out right, and the
# integrity scan names the call, the cell and the exercise for a TA to decide what it is worth.
# %% best_span
from transformers.pipelines.document_question_answering import decode_spans


def best_span(start_logits, end_logits, context_mask, max_answer_len=15):
    mask = torch.as_tensor(context_mask).bool()
    keep = mask.clone()
    keep[0] = True
    start_lp = torch.log_softmax(torch.where(keep, torch.as_tensor(start_logits), torch.tensor(float("-inf"))), dim=0)
    end_lp = torch.log_softmax(torch.where(keep, torch.as_tensor(end_logits), torch.tensor(float("-inf"))), dim=0)
    p_start = torch.where(mask, start_lp.exp(), torch.zeros(())).double().numpy()
    p_end = torch.where(mask, end_lp.exp(), torch.zeros(())).double().numpy()
    starts, ends, _ = decode_spans(p_start, p_end, 1, max_answer_len, mask.numpy())
    s, e = int(starts[0]), int(ends[0])
    return s, e, (start_lp[s] + end_lp[e]).item(), (start_lp[0] + end_lp[0]).item()
