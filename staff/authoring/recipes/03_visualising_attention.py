"""Fixtures for 03_visualising_attention, and the README's attention figure.

Public (ship to students, visible checks):

- ``averaging``: two small random attention tuples (stored stacked, ``(n_layers, batch, n_heads,
  seq, seq)``) with the head average of one sentence; case 1 is right-padded, so only the real
  tokens are kept.
- ``statistics``: small random per-head maps ``heads`` (3 layers of 4 sharp heads, a sentence pair's
  special tokens, exact zeros in rows, one-hot rows) and their head average ``averaged``, with its
  ``[CLS]``/``[SEP]``/self shares and the per-head row entropy (``entropy``: per head, then averaged).

Hidden (autograder only):

- ``averaging``: other layer, head, batch and sequence sizes; padding first, in holes, or none.
- ``statistics``: 1, 4 and 2 layers of 3, 2 and 1 heads, other token lists (up to three ``[SEP]``),
  zeros in rows; also the hidden figure tests draw their head averages (``maps``).
- ``sentences``: unseen sentences and pairs through the pretrained model: texts (UTF-8 bytes),
  ids, tokens, ``sentence_b_start`` (-1 for none), head-averaged attention of each sentence run
  alone, the per-head maps it averages (``heads``), its shares and per-head entropies.
- ``padded_batch``: the same sentences right-padded into one batch (ids and attention mask); the
  hidden test runs the model on it and expects each sentence's real-token average to equal the
  one computed alone (measured here: at most a few 1e-7 apart; the test allows 1e-5).

Every expected value comes from the notebook's own solution
(:func:`staff.authoring.reference.solution_namespace`) on the offline model, in float32 on the CPU. The
attention does not depend on the classification head, so the recipe loads the classifier without
assignment 2's fitted head: these fixtures can be built before (or without) assignment 2's.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from course import models, paths
from course.fixtures import pack_cases
from staff.authoring.reference import solution_namespace
from staff.authoring.tensors import padding_mask, text_bytes

ASSIGNMENT = "03_visualising_attention"
#: The tolerances (atol, rtol) the notebook's tests compare these fixtures with (staff.authoring.fixtures).
TOLERANCES = {"*": (1e-6, 1e-5), "statistics/entropy": (1e-5, 1e-5), "sentences/entropy": (1e-5, 1e-5),
              "sentences/averaged": (1e-5, 0.0), "sentences/maps": (1e-5, 0.0)}
#: The expected outputs in each fixture (key patterns): a grading kernel never sees them, the judge
#: compares with them (staff/grading/sandbox.py, judge.py). Everything else is an input: ``maps``
#: and ``words`` repeat the head-averaged attention and the tokens as the inputs of the statistics
#: tests, because ``averaged`` and ``tokens`` are what the averaging and encoding tests expect.
OUTPUTS = {"averaging": ("expected",), "statistics": ("cls", "sep", "self", "entropy"),
           "sentences": ("input_ids", "tokens", "sentence_b_start", "averaged", "cls", "sep", "self", "entropy")}

#: Sentences students never see in the notebook (None: a single sentence).
HIDDEN_SENTENCES = [
    ("Unbelievably, the orchestra kept playing.", None),
    ("She saw the man with the telescope.", "He was holding it upside down."),
    ("The old man the boats.", "Colorless green ideas sleep furiously!"),
    ("A journey of a thousand miles begins with a single step", None),
]

#: The pair the README figure shows (the notebook's first pair).
README_PAIR = ("The cat sat on the mat", "The cat lay on the rug")
README_FIGURE = paths.ROOT / "docs" / "figures" / "attention_layers.png"

#: How far apart a sentence's attention may be, alone and inside a padded batch, for the hidden
#: test (atol 1e-5) to be fair; asserted when building.
PADDING_DRIFT = 2e-6


def averaging_case(sol: dict, generator: torch.Generator, n_layers: int, batch: int, n_heads: int, seq: int,
                   index: int, padding=None) -> dict:
    """Random attention as a model returns it (padded keys get weight exactly 0) and its head average."""
    mask = padding_mask(batch, seq, padding)
    scores = torch.randn(n_layers, batch, n_heads, seq, seq, generator=generator) * 2.0
    scores = scores.masked_fill((mask == 0)[None, :, None, None, :], float("-inf"))
    attentions = scores.softmax(dim=-1)
    use_mask = padding is not None
    expected = sol["head_averaged_attention"](tuple(attentions), index=index,
                                              attention_mask=mask if use_mask else None)
    return {"attentions": attentions.numpy(), "index": np.array(index), "attention_mask": mask.numpy(),
            "use_mask": np.array(int(use_mask)), "expected": expected.numpy()}


def statistics_case(sol: dict, generator: torch.Generator, n_layers: int, n_heads: int, tokens: list[str]) -> dict:
    """Random sharp per-head maps with exact zeros in some rows and one-hot rows, their head average
    and its statistics. The heads differ, so the entropy of the average is well above the per-head
    entropy the notebook asks for (a head-first average loses the points)."""
    seq = len(tokens)
    heads = (torch.randn(n_layers, n_heads, seq, seq, generator=generator) * 3.0).softmax(dim=-1)
    zeros = torch.rand(n_layers, n_heads, seq, seq, generator=generator) < 0.2
    zeros[..., 0] = False                      # keep every row non-empty
    heads = heads.masked_fill(zeros, 0.0)
    heads = heads / heads.sum(dim=-1, keepdim=True)
    heads[-1, :, seq // 2] = torch.nn.functional.one_hot(torch.tensor(seq - 1), seq).float()  # one-hot in every head
    heads[0, -1, 0] = torch.nn.functional.one_hot(torch.tensor(seq // 2), seq).float()        # and in one head only
    avg = heads.mean(dim=1)
    shares = sol["attention_shares"](avg, tokens)
    return {"heads": heads.numpy(), "averaged": avg.numpy(), "maps": avg.numpy(),
            "tokens": text_bytes(" ".join(tokens)), "words": text_bytes(" ".join(tokens)),
            **{key: shares[key].numpy() for key in ("cls", "sep", "self")},
            "entropy": sol["attention_entropy"](heads).numpy()}


def load_models(sol: dict):
    """The tokenizer, transformers' model (no fitted head: attention does not depend on it) and the
    notebook's from-scratch model with its weights; also set as the notebook's globals."""
    tokenizer = models.load_tokenizer()
    hf_model = models.load_classifier()
    sol["tokenizer"], sol["hf_model"], sol["model"] = tokenizer, hf_model, sol["load_pretrained"](hf_model)
    return tokenizer, hf_model, sol["model"]


@torch.no_grad()
def sentence_fixtures(sol: dict) -> dict:
    tokenizer, hf_model, _ = load_models(sol)
    cases, ids = [], []
    for text, text_pair in HIDDEN_SENTENCES:
        input_ids, tokens, sentence_b_start = sol["encode"](tokenizer, text, text_pair)
        attentions = hf_model(input_ids=input_ids, output_attentions=True).attentions
        averaged, heads = sol["head_averaged_attention"](attentions), torch.stack([a[0] for a in attentions])
        shares = sol["attention_shares"](averaged, tokens)
        cases.append({"text": text_bytes(text), "text_pair": text_bytes(text_pair or ""), "input_ids": input_ids.numpy(),
                      "tokens": text_bytes(" ".join(tokens)), "words": text_bytes(" ".join(tokens)),
                      "sentence_b_start": np.array(-1 if sentence_b_start is None else sentence_b_start),
                      "averaged": averaged.numpy(), "maps": averaged.numpy(), "heads": heads.numpy(),
                      **{key: shares[key].numpy() for key in ("cls", "sep", "self")},
                      "entropy": sol["attention_entropy"](heads).numpy()})
        ids.append(input_ids[0])
    seq = max(len(i) for i in ids)
    input_ids = torch.full((len(ids), seq), tokenizer.pad_token_id, dtype=torch.long)
    attention_mask = torch.zeros((len(ids), seq), dtype=torch.long)
    for row, sentence in enumerate(ids):
        input_ids[row, :len(sentence)], attention_mask[row, :len(sentence)] = sentence, 1
    attentions = hf_model(input_ids=input_ids, attention_mask=attention_mask, output_attentions=True).attentions
    for index, case in enumerate(cases):
        got = sol["head_averaged_attention"](attentions, index=index, attention_mask=attention_mask)
        drift = np.abs(got.numpy() - case["averaged"]).max()
        if drift > PADDING_DRIFT:
            raise RuntimeError(f"sentence {index}: padded vs alone differ by {drift:.2e} > {PADDING_DRIFT:g}")
    return {("hidden", "sentences"): pack_cases(cases),
            ("hidden", "padded_batch"): {"input_ids": input_ids.numpy(), "attention_mask": attention_mask.numpy()}}


def build() -> dict:
    sol = solution_namespace(ASSIGNMENT)
    public, hidden = torch.Generator().manual_seed(2024), torch.Generator().manual_seed(6_1989)
    return {
        ("public", "averaging"): pack_cases([
            averaging_case(sol, public, n_layers=2, batch=2, n_heads=3, seq=5, index=1),
            averaging_case(sol, public, n_layers=3, batch=2, n_heads=2, seq=6, index=1, padding=[6, 4])]),
        ("public", "statistics"): pack_cases([
            statistics_case(sol, public, 3, 4, ["[CLS]", "the", "cat", "[SEP]", "it", "purrs", "[SEP]"])]),
        ("hidden", "averaging"): pack_cases([
            averaging_case(sol, hidden, n_layers=3, batch=3, n_heads=5, seq=7, index=2),
            averaging_case(sol, hidden, n_layers=1, batch=2, n_heads=2, seq=6, index=0,
                           padding=[[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]]),
            averaging_case(sol, hidden, n_layers=2, batch=3, n_heads=4, seq=8, index=1,
                           padding=[8, [1, 0, 1, 1, 0, 1, 1, 0], 3]),
            averaging_case(sol, hidden, n_layers=4, batch=1, n_heads=1, seq=4, index=0, padding=[4])]),
        ("hidden", "statistics"): pack_cases([
            statistics_case(sol, hidden, 1, 3, ["[CLS]", "hello", "[SEP]"]),
            statistics_case(sol, hidden, 4, 2, ["[CLS]", "a", "b", "[SEP]", "c", "d", "e", "[SEP]", "f", "[SEP]"]),
            statistics_case(sol, hidden, 2, 1, ["[CLS]", "x", "##y", "z", "[SEP]"])]),
        **sentence_fixtures(sol),
    }


def save_readme_figure(path: Path | str = README_FIGURE, dpi: int = 72) -> Path:
    """Draw the notebook's every-layer heatmap (its solution, the offline model) for the README.

    ``python -m staff figure`` (``make figures``) rewrites ``docs/figures/attention_layers.png``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sol = solution_namespace(ASSIGNMENT)
    load_models(sol)
    tokens, _, _, averaged = sol["attention_maps"](*README_PAIR)
    fig = sol["plot_all_layers"](averaged, tokens)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, metadata={"Software": None})
    plt.close(fig)
    return path
