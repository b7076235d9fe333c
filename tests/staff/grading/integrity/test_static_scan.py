"""The integrity scan flags code that could game the tests, and answers handed to a library (it
reads code, never runs it; which cells are the student's comes from the release)."""

from __future__ import annotations

import ast

import nbformat
import pytest

from staff import course_dir
from staff.authoring import samples
from staff.course_dir import nbgrader
from staff.grading.integrity import static_scan


@pytest.mark.parametrize(
    "source, flagged",
    [
        ("np.allclose = lambda *a, **k: True", True),
        ("setattr(torch, 'allclose', f)", True),
        ("import builtins\nbuiltins.abs = abs", True),
        ("import socket", True),
        ("!pip install something", True),
        ("import json\nnb = json.load(open('01_attention.ipynb'))", True),
        # shell escapes and magics, as IPython runs them
        ("%sx ls", True),
        ("%system ls", True),
        ("%%bash\nls", True),
        ("%%script sh\nls", True),
        ("files = !ls", True),
        ("%env COURSE_RECORDS=/tmp/x", True),
        ("%run other.py", True),
        ("%load_ext my_extension", True),
        ("%config InteractiveShell.ast_node_interactivity='all'", True),
        # imports by name, attributes built from strings, processes and native code
        ("import importlib\nimportlib.import_module('subprocess')", True),
        ("import importlib\nm = importlib.import_module('sub' + 'process')", True),
        ("__import__('socket')", True),
        ("import sys\np = sys.modules['sub' + 'process']", True),
        ("from sys import modules", True),
        ("import os\ngetattr(os, 'sys' + 'tem')('ls')", True),
        ("import os\nos.execv('/bin/sh', ['sh'])", True),
        ("import os\nos.spawnlp(os.P_WAIT, 'ls', 'ls')", True),
        ("import asyncio\nasyncio.create_subprocess_shell('ls')", True),
        ("import ctypes", True),
        # the test's frames and the kernel's objects (where a hidden test's references and inputs are)
        ("import sys\ncaller = sys._getframe(1).f_locals", True),
        ("import inspect\nframe = inspect.currentframe().f_back", True),
        ("fn = globals()['reference_softmax']", True),
        ("import gc\nfound = [o for o in gc.get_objects() if callable(o)]", True),
        ("shell = get_ipython()", True),
        # honest code
        (
            "def softmax(x, axis=-1):\n    e = np.exp(x - x.max(axis, keepdims=True))\n    return e / e.sum(axis, keepdims=True)",
            False,
        ),
        (
            "weights = np.zeros((3, 3))\nweights[0] += 1\nwith open('notes.txt', 'w') as f: f.write('hi')",
            False,
        ),
        ("%time y = softmax(x)", False),
        ("%matplotlib inline", False),
        ("layer = getattr(model, 'layer0')", False),
        ("for name in ('q_lin', 'k_lin'):\n    setattr(self, name, nn.Linear(4, 4))", False),
        ("for name in ('q_lin', names):\n    setattr(self, name, nn.Linear(4, 4))", True),
        ("for name in ('q_lin', 'k_lin'):\n    name = name + x\n    f = getattr(F, name)", True),
        ("model = model.to(device).eval()", False),
        ("scores = np.einsum('bhqd,bhkd->bhqk', q, k)", False),
        ("%%time\ny = softmax(x)", False),
        ("%timeit -n 1 -r 1 softmax(x)", False),
        ("%%capture out\nfor _ in range(3):\n    y = softmax(x)", False),
        # what a cell magic or a code string runs is code too
        ("%%time\nimport subprocess\ny = softmax(x)", True),
        ("%%capture\nimport socket", True),
        ("%%time\n%%capture\nimport socket", True),
        ("%timeit -n1 -r 1 import socket", True),
        ("%time np.allclose = lambda *a, **k: True", True),
        ("exec('import socket')", True),
        ("get_ipython().run_cell_magic('time', '', code)", True),
        # names built at run time: what they reach cannot be read
        ("layer = getattr(model, f'layer{i}')", True),
        ("f = getattr(F, 'multi_head_' + 'attention_forward')", True),
        ("import __main__\nf = getattr(__main__, 'reference_' + name)", True),
        ("hasattr(qa, name)", True),
        ("import operator\nf = operator.attrgetter(name)(torch)", True),
        ("d = x.__dict__", True),
        ("d = vars(x)", True),
        ("d = locals()", True),
        ("import inspect", True),
        ("import gc", True),
        ("f = __builtins__.getattr", True),
        ("m = __import__('math')", True),
        ("f = eval(text)", True),
    ],
)
def test_integrity_scan(source, flagged):
    assert bool(static_scan.scan_source(source)) == flagged


def test_a_cell_too_deep_for_a_recursive_walk_is_scanned():
    """A 600-branch elif chain (600 nested If nodes) runs in IPython; the scan reads it whole."""
    chain = "if x == 0:\n    y = 0\n" + "".join(f"elif x == {i}:\n    y = {i}\n" for i in range(1, 600))
    assert static_scan.scan_source(chain) == []
    assert static_scan.scan_source(chain + "import socket\n") == ["imports socket (network) (line 1201)"]
    flags = static_scan.scan_source("y = " + "-" * 200_000 + "1")
    assert flags and "cannot be read whole" in flags[0]


@pytest.mark.parametrize(
    "code, call",
    [
        ("import course.text\ny = course.text.torch.softmax(x, -1)", "torch.softmax"),
        ("from course.text import torch as t\ny = t.softmax(x, -1)", "torch.softmax"),
        (
            "import course.models\nB = course.models.transformers.DistilBertModel",
            "transformers.DistilBertModel",
        ),
        ("from course import models\nB = getattr(models.transformers, 'DistilBertModel')", "transformers"),
        ("%%capture\nimport torch\ny = torch.softmax(x, -1)", "torch.softmax"),
    ],
)
def test_a_library_reached_by_another_path_or_in_a_magic_is_named(code, call):
    from staff.grading.integrity import library_use

    found, _ = library_use.uses(code, ["torch", "torch.*", "transformers", "transformers.*"], {"np": "numpy"})
    assert any(call in name for name, _ in found), found


def _released(assignment):
    return nbformat.read(course_dir.release_notebook(assignment), as_version=4)


def test_redefining_a_given_helper_is_flagged(samples1):
    nb = samples.fill(samples1["correct_loops"])
    answer = next(c for c in nb.cells if nbgrader(c).get("grade_id") == "softmax")
    answer.source += "\n\ndef load_cases(*args, **kwargs):\n    return []\n"
    assert any("redefines load_cases" in flag for flag in static_scan.scan(nb, _released("01_attention")))
    assert static_scan.scan(samples.fill(samples1["correct_loops"]), _released("01_attention")) == []


def test_a_cell_marked_locked_by_the_student_is_still_scanned(samples1):
    """nbgrader keeps and runs an answer cell whatever its submitted metadata says: the scan takes
    each cell's role from the release, so a `"locked": true` the student adds hides nothing."""
    nb = samples.fill(samples1["correct_loops"])
    answer = next(c for c in nb.cells if nbgrader(c).get("grade_id") == "softmax")
    answer.source += "\nimport socket\nimport subprocess\n"
    answer.metadata["nbgrader"]["locked"] = True
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "np.allclose = lambda *a, **k: True", metadata={"nbgrader": {"locked": True, "grade_id": "mine"}}
        )
    )
    flags = static_scan.scan(nb, _released("01_attention"))
    assert any("softmax: imports socket" in f for f in flags) and any("subprocess" in f for f in flags)
    assert any("mine: replaces np.allclose" in f for f in flags)


@pytest.mark.parametrize(
    "assignment, cell, code, call",
    [
        (
            "01_attention",
            "softmax",
            "import torch\n\ndef softmax(x, axis=-1):\n"
            "    return torch.softmax(torch.as_tensor(x), dim=axis).numpy()",
            "torch.softmax",
        ),
        (
            "01_attention",
            "softmax",
            "from scipy.special import softmax as scipy_softmax\n\ndef softmax(x, axis=-1):\n"
            "    return scipy_softmax(x, axis=axis)",
            "scipy.special.softmax",
        ),
        (
            "02_distilbert",
            "attention_block",
            "class AttentionBlock(nn.Module):\n    def __init__(self, config):\n"
            "        super().__init__()\n        self.attention = nn.MultiheadAttention(config.dim, config.n_heads)\n",
            "torch.nn.MultiheadAttention",
        ),
        (
            "02_distilbert",
            "model",
            "from transformers.models.distilbert import modeling_distilbert as md\n"
            "Block = md.TransformerBlock\n",
            "transformers.models.distilbert.modeling_distilbert",
        ),
        (
            "05_decoder",
            "causal_attention",
            "import torch.nn.functional as F\n\ndef attend(q, k, v, mask=None):\n"
            "    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask), None",
            "torch.nn.functional.scaled_dot_product_attention",
        ),
        (
            "04_finetuning",
            "train",
            "from transformers import Trainer\n\ndef train(model, data):\n"
            "    return Trainer(model=model).train()",
            "transformers.Trainer",
        ),
        (
            "07_question_answering",
            "best_answer",
            "def best_answer(*args, **kwargs):\n    return qa.pipeline_answer(*args, **kwargs)",
            "course.qa.pipeline_answer",
        ),
    ],
)
def test_a_library_implementation_of_an_exercise_is_flagged_by_name(assignment, cell, code, call):
    sample = next(s for s in samples.load(assignment) if s.student.startswith("correct"))
    sample.cells[cell] = code
    flags = [f for f in static_scan.scan(samples.fill(sample), _released(assignment)) if "library" in f]
    # one flag per cell, naming the call and its line (in assignment 1, everything from torch is named: it is NumPy only)
    assert len(flags) == 1 and flags[0].startswith(f"{cell}: library: uses ") and "exercise " in flags[0], (
        flags
    )
    assert f" {call} (line " in flags[0], flags


@pytest.mark.parametrize("assignment", course_dir.assignments())
def test_honest_samples_and_the_solution_are_not_flagged(assignment):
    released = _released(assignment)
    source = nbformat.read(course_dir.source_notebook(assignment), as_version=4)
    assert static_scan.scan(source, released) == []
    for sample in samples.load(assignment):
        if sample.expected_status != "flagged":
            assert static_scan.scan(samples.fill(sample), released) == [], sample.student


@pytest.mark.parametrize(
    "assignment, cell, code, named",
    [
        (
            "05_decoder",
            "gpt_model",
            "import course.models\nGPT = course.models.transformers.GPT2LMHeadModel\n",
            "(that is, transformers.GPT2LMHeadModel)",
        ),
        (
            "05_decoder",
            "causal_attention",
            "import __main__\n\ndef decoder_mask(n):\n"
            "    return getattr(__main__, 'reference_' + 'decoder_mask')(n)\n",
            "getattr(__main__, <a name built at run time>)",
        ),
        (
            "04_finetuning",
            "train",
            "def train(model, *args, **kwargs):\n    trained = models.load_classifier()\n"
            "    model.forward = lambda *a, **k: trained(*a, **k).logits\n",
            "replaces model.forward",
        ),
        (
            "04_finetuning",
            "train",
            "def train(model, *args, **kwargs):\n    trained = models.load_classifier()\n    return trained\n",
            "course.models.load_classifier",
        ),
        (
            "06_training_decoders",
            "seq2seq",
            "class Seq2Seq(nn.Module):\n    def forward(self, source, source_padding, target_in, target_padding):\n"
            "        h = self.embed(target_in)\n        for layer in self.decoder:\n"
            "            h = layer.norm1(h + layer.self_attn(h, h, h, need_weights=False)[0])\n        return h\n",
            "layer.self_attn (line 5)",
        ),
        (
            "07_question_answering",
            "best_span",
            "def best_span(*args, **kwargs):\n    return getattr(qa, '_select_' + 'starts_ends')()(*args)\n",
            "getattr(qa, <a name built at run time>)",
        ),
        (
            "02_distilbert",
            "attention_block",
            "%%capture\nimport course.models\nBlock = course.models.transformers.models.distilbert.modeling_distilbert.TransformerBlock\n",
            "(that is, transformers.models.distilbert.modeling_distilbert.TransformerBlock)",
        ),
    ],
)
def test_a_shortcut_one_step_from_a_closed_one_is_flagged(assignment, cell, code, named):
    """Issue 49's submissions, each a small step from a trick already closed: another path to the
    library, a magic around it, a name built at run time."""
    sample = next(s for s in samples.load(assignment) if s.student.startswith("correct"))
    sample.cells[cell] = code
    flags = static_scan.scan(samples.fill(sample), _released(assignment))
    assert any(f.startswith(f"{cell}: ") and named in f for f in flags), flags


@pytest.mark.parametrize(
    "assignment, cell, code, outside",
    [
        (
            "01_attention",
            "softmax",
            "import pandas as pd\n\ndef softmax(x, axis=-1):\n    return pd.DataFrame(x).to_numpy()\n",
            "pandas.DataFrame",
        ),
        (
            "02_distilbert",
            "model",
            "class DistilBertClassifier(nn.Module):\n    def __init__(self, config):\n"
            "        super().__init__()\n        self.encoder = models.load_encoder()\n",
            "course.models.load_encoder (line 4)",
        ),
        (
            "07_question_answering",
            "answer_text",
            "import course.text\n\ndef answer_text(*args):\n    return course.text.decode(args[0])\n",
            "course.text",
        ),
    ],
)
def test_a_from_scratch_answer_using_a_module_its_exercise_does_not_allow_is_flagged(
    assignment, cell, code, outside
):
    """Each answer cell says what its answer may use (``may_use`` in the release, beside
    ``library_answers``): a module outside it is named, whatever the list of known implementations
    misses."""
    sample = next(s for s in samples.load(assignment) if s.student.startswith("correct"))
    sample.cells[cell] = code
    flags = [f for f in static_scan.scan(samples.fill(sample), _released(assignment)) if "outside" in f]
    assert len(flags) == 1 and flags[0].startswith(f"{cell}: outside the exercise: uses "), flags
    assert outside in flags[0] and "does not allow (its answer may use " in flags[0], flags


@pytest.mark.parametrize(
    "source",
    [
        "from course import parts\nparts.substituted = None",
        "import course.parts as p\nsetattr(p, 'references', None)",
        "import course.checks as c\ndel c.check_close",
        "from course.parts import references\nreferences.__wrapped__ = None",
    ],
)
def test_a_course_module_changed_under_another_name_is_flagged(source):
    assert any(
        "parts" in f or "check_close" in f or "references" in f for f in static_scan.scan_source(source)
    )


def test_a_module_imported_in_one_cell_and_changed_in_another_is_flagged():
    modules = static_scan.module_names(ast.parse("from course import parts as helpers"))
    assert static_scan.scan_source("helpers.references = lambda namespace: None", modules=modules)
    assert static_scan.scan_source("helpers.references = lambda namespace: None") == []
