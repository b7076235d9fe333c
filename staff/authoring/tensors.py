"""Helpers the fixture recipes share: random modules, padding masks, token ids, and turning
modules, numbers and text into the arrays a safetensors fixture can hold. Written once here, so
every assignment's fixtures are made the same way."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch


def randomize(module: torch.nn.Module, generator: torch.Generator) -> torch.nn.Module:
    """Random weights everywhere (LayerNorm scales and every bias too, so a swapped norm shows);
    returns the module in eval mode."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            noise = torch.randn(p.shape, generator=generator)
            if name.endswith("bias"):
                p.copy_(0.1 * noise)
            elif p.dim() == 1:  # LayerNorm weight
                p.copy_(1 + 0.2 * noise)
            elif "embeddings" in name:
                p.copy_(noise)
            else:  # Linear (out, in)
                p.copy_(noise / p.shape[1] ** 0.5)
    return module.eval()


def padding_mask(batch: int, seq: int, pattern: Sequence | None = None) -> torch.Tensor:
    """(batch, seq) long attention mask: all ones for ``None``; per row, an int ``n`` is ``n`` real
    tokens then right padding, a list is the row itself (left padding, holes). Every row keeps at
    least one real token."""
    if pattern is None:
        return torch.ones(batch, seq, dtype=torch.long)
    rows = [[1] * n + [0] * (seq - n) if isinstance(n, int) else list(n) for n in pattern]
    mask = torch.tensor(rows, dtype=torch.long)
    assert mask.shape == (batch, seq) and (mask.sum(dim=1) > 0).all(), (mask.shape, pattern)
    return mask


def random_ids(generator: torch.Generator, vocab_size: int, mask: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """Random token ids in [1, vocab_size), ``pad_id`` where the mask is 0."""
    ids = torch.randint(1, vocab_size, mask.shape, generator=generator)
    return ids.masked_fill(mask == 0, pad_id)


def state_arrays(module: torch.nn.Module, prefix: str = "state.") -> dict[str, np.ndarray]:
    """A module's state dict as arrays, keys prefixed (``state.<name>``: the notebooks' layout)."""
    return {f"{prefix}{k}": v.detach().cpu().numpy().copy() for k, v in module.state_dict().items()}


def int_array(value: int) -> np.ndarray:
    return np.array(value, dtype=np.int64)


def float_array(value: float) -> np.ndarray:
    return np.array(value, dtype=np.float64)


def text_bytes(text: str) -> np.ndarray:
    """Text as UTF-8 bytes (safetensors holds numbers only); the notebooks decode it back."""
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).copy()
