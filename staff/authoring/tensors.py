"""Helpers the fixture recipes share: random draws, random modules, padding masks, token ids, and
turning modules, numbers and text into the arrays a safetensors fixture can hold. Written once here,
so every assignment's fixtures are made the same way."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from transformers import get_cosine_schedule_with_warmup


class Draws:
    """Random test inputs that are the same bits on every machine: NumPy's PCG64 generator and its
    documented-stable distributions, cast to float32. PyTorch's own CPU sampler is not stable:
    ``torch.randn`` vectorises Box-Muller differently per instruction set, so the same seed gave
    other inputs under ``ATEN_CPU_CAPABILITY=default`` (docs/scaling.md) and every expected output built
    from them moved too (``make fixtures-check`` on another CPU). Integer draws go through NumPy as well,
    so one generator feeds a whole recipe in a fixed order."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def normal(self, *shape) -> torch.Tensor:
        """Standard normal float32 tensor; ``shape`` as separate sizes or one tuple / ``torch.Size``."""
        return torch.from_numpy(self.rng.standard_normal(_shape(shape)).astype(np.float32))

    def uniform(self, *shape) -> torch.Tensor:
        """Uniform [0, 1) float32 tensor."""
        return torch.from_numpy(self.rng.random(_shape(shape)).astype(np.float32))

    def integers(self, low: int, high: int, shape) -> torch.Tensor:
        """int64 tensor of integers in [low, high)."""
        return torch.from_numpy(self.rng.integers(low, high, _shape((shape,)), dtype=np.int64))


def _shape(shape: tuple) -> tuple[int, ...]:
    return tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else tuple(shape)


def randomize(module: torch.nn.Module, draws: Draws) -> torch.nn.Module:
    """Random weights everywhere (LayerNorm scales and every bias too, so a swapped norm shows);
    returns the module in eval mode."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            noise = draws.normal(p.shape)
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


def random_ids(draws: Draws, vocab_size: int, mask: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """Random token ids in [1, vocab_size), ``pad_id`` where the mask is 0."""
    ids = draws.integers(1, vocab_size, mask.shape)
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


def arrays(**values) -> dict[str, np.ndarray]:
    """Tensors and numbers as the arrays of a fixture case, under their keyword names."""
    return {
        k: v.detach().cpu().numpy().copy() if torch.is_tensor(v) else np.asarray(v) for k, v in values.items()
    }


def train_steps(
    model: torch.nn.Module,
    batches,
    loss_of,
    learning_rate: float,
    warmup_steps: int,
    weight_decay: float,
    max_grad_norm: float = 1.0,
) -> tuple[torch.Tensor, torch.nn.Module]:
    """The given training loops' optimisation (assignments 5 and 6), one step per batch, in float64:
    AdamW, a linear warm-up and a cosine decay to 0 over the steps, gradients clipped to
    ``max_grad_norm``. In float32, Adam's division by the root of tiny squared gradients turns rounding
    into steps (measured after 8 steps: 4e-4 on the reversal logits between ATEN_CPU_CAPABILITY=default
    and avx512); in float64 every value agrees to 5e-15 across instruction sets and thread counts.
    Returns every step's loss and the model, in eval mode."""
    model.double().train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=weight_decay)
    scheduler = get_cosine_schedule_with_warmup(optimizer, warmup_steps, len(batches))
    losses = []
    for batch in batches:
        loss = loss_of(model, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    return torch.tensor(losses, dtype=torch.float64), model.eval()
