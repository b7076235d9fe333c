"""The text the course's language models read: Ambrose Bierce's *The Devil's Dictionary*, by character.

Assignment 6 trains a small GPT on it in about a minute on a CPU, so the corpus has to be small
(358 KB), shipped with the course (offline, no download on Colab) and free to redistribute (public
domain: published 1911, see ``data/lm/README.md``). Characters rather than subword tokens keep the
vocabulary (96 symbols) and the model tiny, and make every step of tokenisation visible.

The vocabulary is fixed (newline and printable ASCII), not read off the text: the autograder's
held-out text (entries WAR to Z, kept out of the student bundle) uses the same ids.
"""

from __future__ import annotations

import torch

from course import paths

CORPUS = paths.DATA / "lm" / "devils_dictionary.txt"
#: Index = token id. Newline first, then printable ASCII from space (32) to tilde (126).
CHARS = "\n" + "".join(chr(code) for code in range(32, 127))
VOCAB_SIZE = len(CHARS)
_IDS = {char: i for i, char in enumerate(CHARS)}


def encode(text: str) -> torch.Tensor:
    """Token ids (int64) of ``text``; a character outside the vocabulary is an error that names it."""
    unknown = sorted({char for char in text if char not in _IDS})
    if unknown:
        raise ValueError(
            f"characters outside the course's vocabulary (newline and printable ASCII): {unknown[:10]}"
        )
    return torch.tensor([_IDS[char] for char in text], dtype=torch.long)


def decode(ids) -> str:
    """The text of a sequence of token ids (a tensor or a list)."""
    values = ids.tolist() if hasattr(ids, "tolist") else list(ids)
    return "".join(CHARS[int(i)] for i in values)


def load_corpus(validation_fraction: float = 0.1) -> tuple[torch.Tensor, torch.Tensor]:
    """(train_ids, validation_ids): the corpus encoded and split at one point, validation last."""
    if not CORPUS.is_file():
        raise FileNotFoundError(
            f"{CORPUS} is missing: it ships with the course (data/lm/); "
            "re-clone the course repository or restore that folder"
        )
    ids = encode(CORPUS.read_text(encoding="ascii"))
    split = int(len(ids) * (1 - validation_fraction))
    return ids[:split], ids[split:]
