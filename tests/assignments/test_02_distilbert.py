"""Assignment 2's reference solution (the source notebook's solution cells) and its classifier head.

Fast unit tests: the solution is executed from the notebook with staff.authoring.reference (no kernel,
no nbgrader); the notebook's own checks run under `staff.authoring.validate` and the sample autogrades.
"""
import pytest
import torch
import transformers
from safetensors.torch import load_file

from course import models
from course.fixtures import fixture_file
from staff.authoring import recipes
from staff.authoring.reference import solution_namespace

ASSIGNMENT = "02_distilbert"
recipe = recipes.load(ASSIGNMENT)
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
        "hidden_states": max((h[real] - e[real]).abs().max().item()
                             for h, e in zip(hidden_states, expected.hidden_states)),
        "attentions": max((a.transpose(1, 2)[real] - e.transpose(1, 2)[real]).abs().max().item()
                          for a, e in zip(attentions, expected.attentions)),
    }


def test_reference_matches_transformers_on_pretrained_weights(sol, hf_model, tokenizer):
    batch = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    assert (batch["attention_mask"] == 0).any(), "the batch must be padded"
    model = sol["load_pretrained"](hf_model)
    assert isinstance(model, sol["DistilBertClassifier"]) and not model.training
    with torch.no_grad():
        expected = hf_model(**batch, output_hidden_states=True, output_attentions=True)
        outputs = model(batch["input_ids"], batch["attention_mask"])
    assert len(outputs[1]) == hf_model.config.n_layers + 1 and len(outputs[2]) == hf_model.config.n_layers
    errors = max_differences(expected, outputs, batch["attention_mask"])
    assert max(errors.values()) <= 1e-4, errors


def test_reference_works_for_another_config(sol):
    """A random 2-layer model with another dim and head count, against transformers on the same weights."""
    torch.manual_seed(0)
    config = transformers.DistilBertConfig(vocab_size=70, dim=24, n_layers=2, n_heads=3, hidden_dim=40,
                                           max_position_embeddings=16, num_labels=4, attn_implementation="eager")
    reference = transformers.DistilBertForSequenceClassification(config).eval()
    model = sol["DistilBertClassifier"](config).eval()
    model.load_state_dict(models.state_dict_for_course_model(reference, layout="flat"), strict=True)
    input_ids = torch.randint(1, 70, (3, 9))
    attention_mask = torch.tensor([[1] * 9, [1] * 4 + [0] * 5, [1] * 7 + [0] * 2])
    with torch.no_grad():
        expected = reference(input_ids=input_ids, attention_mask=attention_mask,
                             output_hidden_states=True, output_attentions=True)
        outputs = model(input_ids, attention_mask)
    assert outputs[0].shape == (3, 4) and outputs[2][0].shape == (3, 3, 9, 9)
    errors = max_differences(expected, outputs, attention_mask)
    assert max(errors.values()) <= 1e-5, errors


def test_flat_layout_names(hf_model):
    state = models.state_dict_for_course_model(hf_model, layout="flat")
    assert "layers.0.q_lin.weight" in state and "layers.5.output_layer_norm.bias" in state
    assert not any(k.startswith(("transformer.", "distilbert.")) or ".attention." in k or ".ffn." in k for k in state)
    assert len(state) == len(models.state_dict_for_course_model(hf_model))
    with pytest.raises(ValueError, match="layout"):
        models.state_dict_for_course_model(hf_model, layout="nested")


def test_classifier_head_is_fitted(hf_model, tokenizer):
    """The shipped head reaches at least the validation accuracy the notebook quotes (71.1 %)."""
    head = load_file(fixture_file(ASSIGNMENT, "classifier_head"))
    assert sorted(head) == sorted(models.HEAD_KEYS)
    assert head["classifier.weight"].shape == (2, hf_model.config.dim)
    sentences, labels = recipe.read_sentiment("validation")
    assert len(sentences) == 128
    assert recipe.accuracy(hf_model, tokenizer, sentences, labels) >= recipe.HEAD_VALIDATION_ACCURACY
