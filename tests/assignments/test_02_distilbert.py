"""Assignment 2's reference solution (the source notebook's solution cells) and its classifier head.

Fast unit tests: the solution is executed from the notebook with staff.authoring.reference (no kernel,
no nbgrader); the notebook's own checks run under `staff.authoring.validate` and the sample autogrades.
Also: the hidden tests of exercises 3 and 4 grade those exercises on their own (they pass with broken
earlier parts, and still fail a broken part of their own), and the cells that call transformers'
model pass it only the inputs transformers 4.57 accepts.
"""

import nbformat
import pytest
import torch
import transformers
from safetensors.torch import load_file

from course import models
from course.fixtures import fixture_file
from staff import course_dir
from staff.authoring import assignments
from staff.authoring.reference import solution_namespace

ASSIGNMENT = "02_distilbert"
recipe = assignments.recipe(ASSIGNMENT)
SENTENCES = [  # different lengths: a padded batch
    "What a wonderful, warm and funny film!",
    "Boring.",
    "The plot made little sense and the ending dragged on for far too long.",
]


@pytest.fixture(scope="module")
def sol():
    namespace = solution_namespace(ASSIGNMENT)
    namespace["device"] = "cpu"  # compare on the CPU even where a GPU exists
    return namespace


@pytest.fixture(scope="module")
def hf_model():
    return models.load_classifier(fixture_file(ASSIGNMENT, "classifier_head"))  # offline: tests/conftest.py


@pytest.fixture(scope="module")
def tokenizer():
    return models.load_tokenizer()


def max_differences(expected, outputs, attention_mask) -> dict[str, float]:
    """Largest |difference| of logits, hidden states (real tokens) and attentions (real query rows)."""
    logits, hidden_states, attentions = outputs
    real = attention_mask.bool()
    assert len(hidden_states) == len(expected.hidden_states) and len(attentions) == len(expected.attentions)
    return {
        "logits": (logits - expected.logits).abs().max().item(),
        "hidden_states": max(
            (h[real] - e[real]).abs().max().item() for h, e in zip(hidden_states, expected.hidden_states)
        ),
        "attentions": max(
            (a.transpose(1, 2)[real] - e.transpose(1, 2)[real]).abs().max().item()
            for a, e in zip(attentions, expected.attentions)
        ),
    }


def test_reference_matches_transformers_on_pretrained_weights(sol, hf_model, tokenizer):
    batch = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    assert (batch["attention_mask"] == 0).any(), "the batch must be padded"
    model = sol["load_pretrained"](hf_model)
    assert isinstance(model, sol["DistilBertClassifier"]) and not model.training
    with torch.no_grad():
        expected = hf_model(
            input_ids=batch["input_ids"],
            attention_mask=batch["attention_mask"],
            output_hidden_states=True,
            output_attentions=True,
        )
        outputs = model(batch["input_ids"], batch["attention_mask"])
    assert len(outputs[1]) == hf_model.config.n_layers + 1 and len(outputs[2]) == hf_model.config.n_layers
    errors = max_differences(expected, outputs, batch["attention_mask"])
    assert max(errors.values()) <= 1e-4, errors


def test_reference_works_for_another_config(sol):
    """A random 2-layer model with another dim and head count, against transformers on the same weights."""
    torch.manual_seed(0)
    config = transformers.DistilBertConfig(
        vocab_size=70,
        dim=24,
        n_layers=2,
        n_heads=3,
        hidden_dim=40,
        max_position_embeddings=16,
        num_labels=4,
        attn_implementation="eager",
    )
    reference = transformers.DistilBertForSequenceClassification(config).eval()
    model = sol["DistilBertClassifier"](config).eval()
    model.load_state_dict(recipe.course_layout(reference), strict=True)
    input_ids = torch.randint(1, 70, (3, 9))
    attention_mask = torch.tensor([[1] * 9, [1] * 4 + [0] * 5, [1] * 7 + [0] * 2])
    with torch.no_grad():
        expected = reference(
            input_ids=input_ids,
            attention_mask=attention_mask,
            output_hidden_states=True,
            output_attentions=True,
        )
        outputs = model(input_ids, attention_mask)
    assert outputs[0].shape == (3, 4) and outputs[2][0].shape == (3, 3, 9, 9)
    errors = max_differences(expected, outputs, attention_mask)
    assert max(errors.values()) <= 1e-5, errors


def test_flat_layout_names(sol, hf_model):
    state = recipe.course_layout(hf_model)
    assert "layers.0.q_lin.weight" in state and "layers.5.output_layer_norm.bias" in state
    assert not any(
        k.startswith(("transformer.", "distilbert.")) or ".attention." in k or ".ffn." in k for k in state
    )
    assert sorted(state) == sorted(sol["DistilBertClassifier"](hf_model.config).state_dict())
    state["classifier.bias"] += 1  # copies: the source model is untouched
    assert not torch.equal(state["classifier.bias"], hf_model.classifier.bias)


def test_classifier_head_is_fitted(hf_model, tokenizer):
    """The shipped head reaches at least the validation accuracy the notebook quotes (71.1 %)."""
    head = load_file(fixture_file(ASSIGNMENT, "classifier_head"))
    assert sorted(head) == sorted(models.HEAD_KEYS)
    assert head["classifier.weight"].shape == (2, hf_model.config.dim)
    sentences, labels = recipe.read_sentiment("validation")
    assert len(sentences) == 128
    validation = recipe.accuracy(hf_model, tokenizer, sentences, labels)
    assert validation >= recipe.HEAD_VALIDATION_ACCURACY
    # the recipe's train accuracy: the head on the [CLS] vectors it was fitted on, the model's own answers
    cls = recipe.cls_features(hf_model.distilbert, tokenizer, sentences)
    assert recipe.head_accuracy(hf_model, cls, labels) == validation


def cell_sources() -> dict[str, str]:
    notebook = nbformat.read(course_dir.source_notebook(ASSIGNMENT), as_version=4)
    return {cell["id"]: cell.source for cell in notebook.cells}


@pytest.fixture
def fresh(hf_model, tokenizer):
    """A new solution namespace with the objects the notebook's cells before the tests define."""
    namespace = solution_namespace(ASSIGNMENT)
    namespace.update(device="cpu", hf_model=hf_model, tokenizer=tokenizer)
    return namespace


def test_later_exercises_are_graded_on_their_own(fresh):
    """With exercises 1 and 2 broken, the checks of exercises 3 and 4 still pass (the visible one judges
    the wiring with the student's own parts, the hidden ones use the reference parts), and the names the
    student defined are given back afterwards."""
    cells = cell_sources()

    class BrokenEmbeddings(fresh["Embeddings"]):
        def forward(self, input_ids):
            return super().forward(input_ids) * 2

    class BrokenBlock(fresh["AttentionBlock"]):
        def attend(self, q, k, v, attention_mask):
            raise NotImplementedError

    class WrongScale(fresh["AttentionBlock"]):  # computes, but wrong values
        def attend(self, q, k, v, attention_mask):
            return super().attend(q * 2, k, v, attention_mask)

    fresh.update(Embeddings=BrokenEmbeddings, AttentionBlock=WrongScale)
    exec(cells["test_model_visible"], fresh)  # the wiring, judged with the student's own parts
    with pytest.raises(AssertionError):
        exec(cells["test_block_visible"], fresh)  # the mistake is caught where it is made
    fresh.update(AttentionBlock=BrokenBlock)
    exec(cells["test_model_hidden"], fresh)
    exec(cells["test_pretrained_hidden"], fresh)
    assert fresh["Embeddings"] is BrokenEmbeddings and fresh["AttentionBlock"] is BrokenBlock


def test_hidden_tests_still_fail_their_own_mistakes(fresh):
    cells = cell_sources()
    exec(cells["test_model_hidden"], fresh)  # defines the reference parts; passes with the solution
    solution_classifier = fresh["DistilBertClassifier"]

    class NoHead(solution_classifier):  # the [CLS] head skipped: an exercise 3 mistake
        def forward(self, input_ids, attention_mask=None):
            logits, hidden_states, attentions = super().forward(input_ids, attention_mask)
            return self.classifier(hidden_states[-1][:, 0]), hidden_states, attentions

    fresh["DistilBertClassifier"] = NoHead
    for cell in ("test_model_visible", "test_model_hidden"):
        with pytest.raises(AssertionError, match="logits"):
            exec(cells[cell], fresh)
    fresh["DistilBertClassifier"] = solution_classifier
    fresh["course_name"] = lambda name: name.removeprefix("distilbert.")  # an exercise 4 mistake
    with pytest.raises(RuntimeError, match="Missing key"):  # strict loading into the reference classes
        exec(cells["test_pretrained_hidden"], fresh)


def test_course_name_gives_the_course_layout(sol, hf_model):
    renamed = {sol["course_name"](name): value for name, value in hf_model.state_dict().items()}
    expected = recipe.course_layout(hf_model)
    assert sorted(renamed) == sorted(expected)
    assert all(torch.equal(renamed[k], expected[k]) for k in expected)
    assert sol["course_name"]("distilbert.transformer.layer.11.ffn.lin2.bias") == "layers.11.lin2.bias"


def test_sdpa_matches_the_notebooks_attention(sol):
    torch.manual_seed(0)
    config = transformers.DistilBertConfig(dim=24, n_heads=3, hidden_dim=16)
    block = sol["AttentionBlock"](config).eval()
    q, k, v = (torch.randn(3, 3, 7, 8) for _ in range(3))
    mask = torch.tensor([[1] * 7, [1, 1, 0, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1, 1]])
    context, _ = block.attend(q, k, v, mask)
    fused = sol["sdpa_attention"](q, k, v, mask)
    assert (context - fused).abs().max().item() < 1e-6


def test_cells_pass_transformers_only_the_inputs_it_takes(fresh, hf_model):
    """transformers 4.57's DistilBertForSequenceClassification.forward rejects token_type_ids, which the
    BERT tokenizer may return: the cells that call transformers' model must run against such a model,
    with a tokenizer that returns them."""

    class WithTokenTypes:
        def __init__(self, tokenizer):
            self.tokenizer = tokenizer

        def __call__(self, *args, **kwargs):
            return self.tokenizer(*args, return_token_type_ids=True, **kwargs)

        def __getattr__(self, name):
            return getattr(self.tokenizer, name)

    class Strict(type(hf_model)):
        def forward(
            self, input_ids=None, attention_mask=None, output_hidden_states=None, output_attentions=None
        ):
            return super().forward(
                input_ids=input_ids,
                attention_mask=attention_mask,
                output_hidden_states=output_hidden_states,
                output_attentions=output_attentions,
            )

    cells = cell_sources()
    fresh["tokenizer"] = WithTokenTypes(fresh["tokenizer"])
    original = type(hf_model)
    hf_model.__class__ = Strict
    try:
        with pytest.raises(TypeError, match="token_type_ids"):
            hf_model(**fresh["tokenizer"]("A sentence.", return_tensors="pt"))
        for cell in ("test_pretrained_visible", "parity", "padding_experiment"):
            exec(cells[cell], fresh)
    finally:
        hf_model.__class__ = original
