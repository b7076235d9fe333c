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
  zeros in rows; also the hidden figure tests draw their head averages (``maps``): what the
  solution's ``plot_attention`` (last layer) and ``plot_all_layers`` (every panel) show, read back
  from its figures with :mod:`course.figures` (``attention_plot``, ``layers_plot`` and their
  ``_x``/``_y`` tick labels and ``_layer``, the layer each title names).
- ``averaging``: also what the solution's ``plot_token_attention`` shows for the first sentence and
  the last query (``token_plot``, ``_x``, ``_y``, ``_layer``), with the tokens ``w0``, ``w1``, ...
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

from course import figures, models, paths
from course.fixtures import pack_cases
from staff.authoring.reference import solution_namespace
from staff.authoring.tensors import Draws, padding_mask, text_bytes

ASSIGNMENT = "03_visualising_attention"
#: The tolerances (atol, rtol) the notebook's tests compare these fixtures with (staff.authoring.fixtures).
TOLERANCES = {
    "*": (1e-6, 1e-5),
    "statistics/entropy": (1e-5, 1e-5),
    "sentences/entropy": (1e-5, 1e-5),
    # An input, not graded (kernels read the committed copy): the pretrained model's per-head
    # attention in float32. Measured moves: 33.5% of (1e-6, 1e-5) under ATEN_CPU_CAPABILITY=default
    # on an earlier machine, 1.61e-6 absolute on an Intel Xeon (issue 50) and 2.74e-6 on an AMD EPYC
    # (native kernels, one thread), past half of it. Its tolerance is what an input needs (the same
    # attention to within 1e-5): the largest move measured is 27% of that, the check allows half.
    "sentences/heads": (1e-5, 1e-5, 0.5),
    "sentences/averaged": (1e-5, 0.0),
    "sentences/maps": (1e-5, 0.0),
    **{
        plot: (1e-6, 0.0)
        for plot in ("statistics/attention_plot", "statistics/layers_plot", "averaging/token_plot")
    },
}
#: The expected outputs in each fixture (key patterns): a grading kernel never sees them, the judge
#: compares with them (staff/grading/execution/sandbox.py, judge.py). Everything else is an input: ``maps``
#: and ``words`` repeat the head-averaged attention and the tokens as the inputs of the statistics
#: tests, because ``averaged`` and ``tokens`` are what the averaging and encoding tests expect.
OUTPUTS = {
    "averaging": ("expected", "token_plot*"),
    "statistics": ("cls", "sep", "self", "entropy", "attention_plot*", "layers_plot*"),
    "sentences": ("input_ids", "tokens", "sentence_b_start", "averaged", "cls", "sep", "self", "entropy"),
}


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


def averaging_case(
    sol: dict, draws: Draws, n_layers: int, batch: int, n_heads: int, seq: int, index: int, padding=None
) -> dict:
    """Random attention as a model returns it (padded keys get weight exactly 0) and its head average."""
    mask = padding_mask(batch, seq, padding)
    scores = draws.normal(n_layers, batch, n_heads, seq, seq) * 2.0
    scores = scores.masked_fill((mask == 0)[None, :, None, None, :], float("-inf"))
    attentions = scores.softmax(dim=-1)
    use_mask = padding is not None
    expected = sol["head_averaged_attention"](
        tuple(attentions), index=index, attention_mask=mask if use_mask else None
    )
    return {
        "attentions": attentions.numpy(),
        "index": np.array(index),
        "attention_mask": mask.numpy(),
        "use_mask": np.array(int(use_mask)),
        "expected": expected.numpy(),
    }


def statistics_case(sol: dict, draws: Draws, n_layers: int, n_heads: int, tokens: list[str]) -> dict:
    """Random sharp per-head maps with exact zeros in some rows and one-hot rows, their head average
    and its statistics. The heads differ, so the entropy of the average is well above the per-head
    entropy the notebook asks for (a head-first average loses the points)."""
    seq = len(tokens)
    heads = (draws.normal(n_layers, n_heads, seq, seq) * 3.0).softmax(dim=-1)
    zeros = draws.uniform(n_layers, n_heads, seq, seq) < 0.2
    zeros[..., 0] = False  # keep every row non-empty
    heads = heads.masked_fill(zeros, 0.0)
    heads = heads / heads.sum(dim=-1, keepdim=True)
    heads[-1, :, seq // 2] = torch.nn.functional.one_hot(
        torch.tensor(seq - 1), seq
    ).float()  # one-hot in every head
    heads[0, -1, 0] = torch.nn.functional.one_hot(torch.tensor(seq // 2), seq).float()  # and in one head only
    avg = heads.mean(dim=1)
    shares = sol["attention_shares"](avg, tokens)
    return {
        "heads": heads.numpy(),
        "averaged": avg.numpy(),
        "maps": avg.numpy(),
        "tokens": text_bytes(" ".join(tokens)),
        "words": text_bytes(" ".join(tokens)),
        **{key: shares[key].numpy() for key in ("cls", "sep", "self")},
        "entropy": sol["attention_entropy"](heads).numpy(),
    }


def _read_panels(prefix: str, panels: list) -> dict[str, np.ndarray]:
    """What the solution's figure shows, panel by panel, as ``prefix``-ed expected outputs: the
    values (stacked), tick labels and the layer each title names (:func:`course.figures.read_heatmap`)."""
    read = [figures.read_heatmap(prefix, ax) for ax in panels]
    return {prefix + part: np.stack([one[part] for one in read]) for part in read[0]}


def plot_outputs(sol: dict, case: dict) -> dict:
    """A hidden ``statistics`` case with what the solution's ``plot_attention`` (the last layer, on
    a given Axes) and ``plot_all_layers`` draw for its ``maps`` and ``words``."""
    import matplotlib.pyplot as plt

    maps, words = torch.tensor(case["maps"]), bytes(case["words"]).decode("utf-8").split(" ")
    last = len(maps) - 1
    grid, cells = plt.subplots(2, 2)
    single = _read_panels("attention_plot", [sol["plot_attention"](maps, words, last, ax=cells[1, 0])])
    plt.close(grid)
    figure = sol["plot_all_layers"](maps, words)
    layers = _read_panels("layers_plot", figures.layer_panels("plot_all_layers", figure, len(maps)))
    plt.close(figure)
    return {**case, **{key: value[0] for key, value in single.items()}, **layers}


def token_plot_outputs(sol: dict, case: dict) -> dict:
    """A hidden ``averaging`` case with what the solution's ``plot_token_attention`` draws for its
    first sentence, the last query and the tokens ``w0``, ``w1``, ... (as the hidden test calls it)."""
    import matplotlib.pyplot as plt

    first = tuple(torch.tensor(layer[:1]) for layer in case["attentions"])
    seq = case["attentions"].shape[-1]
    figure = sol["plot_token_attention"](first, [f"w{i}" for i in range(seq)], seq - 1)
    out = {
        **case,
        **_read_panels("token_plot", figures.layer_panels("plot_token_attention", figure, len(first))),
    }
    plt.close(figure)
    return out


def load_models(sol: dict):
    """The tokenizer and transformers' model (eager attention; no fitted head: attention does not
    depend on it), also set as the notebook's globals."""
    tokenizer = models.load_tokenizer()
    hf_model = models.load_classifier()
    sol["tokenizer"], sol["hf_model"] = tokenizer, hf_model
    return tokenizer, hf_model


@torch.no_grad()
def sentence_fixtures(sol: dict) -> dict:
    tokenizer, hf_model = load_models(sol)
    cases, ids = [], []
    for text, text_pair in HIDDEN_SENTENCES:
        input_ids, tokens, sentence_b_start = sol["encode"](tokenizer, text, text_pair)
        attentions = hf_model(input_ids=input_ids, output_attentions=True).attentions
        averaged, heads = sol["head_averaged_attention"](attentions), torch.stack([a[0] for a in attentions])
        shares = sol["attention_shares"](averaged, tokens)
        cases.append(
            {
                "text": text_bytes(text),
                "text_pair": text_bytes(text_pair or ""),
                "input_ids": input_ids.numpy(),
                "tokens": text_bytes(" ".join(tokens)),
                "words": text_bytes(" ".join(tokens)),
                "sentence_b_start": np.array(-1 if sentence_b_start is None else sentence_b_start),
                "averaged": averaged.numpy(),
                "maps": averaged.numpy(),
                "heads": heads.numpy(),
                **{key: shares[key].numpy() for key in ("cls", "sep", "self")},
                "entropy": sol["attention_entropy"](heads).numpy(),
            }
        )
        ids.append(input_ids[0])
    seq = max(len(i) for i in ids)
    input_ids = torch.full((len(ids), seq), tokenizer.pad_token_id, dtype=torch.long)
    attention_mask = torch.zeros((len(ids), seq), dtype=torch.long)
    for row, sentence in enumerate(ids):
        input_ids[row, : len(sentence)], attention_mask[row, : len(sentence)] = sentence, 1
    attentions = hf_model(
        input_ids=input_ids, attention_mask=attention_mask, output_attentions=True
    ).attentions
    for index, case in enumerate(cases):
        got = sol["head_averaged_attention"](attentions, index=index, attention_mask=attention_mask)
        drift = np.abs(got.numpy() - case["averaged"]).max()
        if drift > PADDING_DRIFT:
            raise RuntimeError(f"sentence {index}: padded vs alone differ by {drift:.2e} > {PADDING_DRIFT:g}")
    return {
        ("hidden", "sentences"): pack_cases(cases),
        ("hidden", "padded_batch"): {
            "input_ids": input_ids.numpy(),
            "attention_mask": attention_mask.numpy(),
        },
    }


def build() -> dict:
    sol = solution_namespace(ASSIGNMENT)
    public, hidden = Draws(2024), Draws(6_1989)
    return {
        ("public", "averaging"): pack_cases(
            [
                averaging_case(sol, public, n_layers=2, batch=2, n_heads=3, seq=5, index=1),
                averaging_case(sol, public, n_layers=3, batch=2, n_heads=2, seq=6, index=1, padding=[6, 4]),
            ]
        ),
        ("public", "statistics"): pack_cases(
            [statistics_case(sol, public, 3, 4, ["[CLS]", "the", "cat", "[SEP]", "it", "purrs", "[SEP]"])]
        ),
        ("hidden", "averaging"): pack_cases(
            token_plot_outputs(sol, case)
            for case in [
                averaging_case(sol, hidden, n_layers=3, batch=3, n_heads=5, seq=7, index=2),
                averaging_case(
                    sol,
                    hidden,
                    n_layers=1,
                    batch=2,
                    n_heads=2,
                    seq=6,
                    index=0,
                    padding=[[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]],
                ),
                averaging_case(
                    sol,
                    hidden,
                    n_layers=2,
                    batch=3,
                    n_heads=4,
                    seq=8,
                    index=1,
                    padding=[8, [1, 0, 1, 1, 0, 1, 1, 0], 3],
                ),
                averaging_case(sol, hidden, n_layers=4, batch=1, n_heads=1, seq=4, index=0, padding=[4]),
            ]
        ),
        ("hidden", "statistics"): pack_cases(
            plot_outputs(sol, case)
            for case in [
                statistics_case(sol, hidden, 1, 3, ["[CLS]", "hello", "[SEP]"]),
                statistics_case(
                    sol, hidden, 4, 2, ["[CLS]", "a", "b", "[SEP]", "c", "d", "e", "[SEP]", "f", "[SEP]"]
                ),
                statistics_case(sol, hidden, 2, 1, ["[CLS]", "x", "##y", "z", "[SEP]"]),
            ]
        ),
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
