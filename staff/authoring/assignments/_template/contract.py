"""What the example exercise's released text promises about the inputs its hidden test feeds it,
in its own words: `make fixtures` refuses a hidden case outside it (staff/authoring/contract_kit.py).
Copied by `make new-assignment`: replace it with the real exercises'."""

from __future__ import annotations

from staff.authoring.contract_kit import floats, term


def _features(case) -> str | None:
    """x has one axis or more; gamma and beta one number per feature (x's last axis)."""
    if case["x"].ndim < 1 or case["x"].shape[-1] < 2:
        return f"x of shape {case['x'].shape} has no row of features to normalise"
    for key in ("gamma", "beta"):
        if case[key].shape != case["x"].shape[-1:]:
            return f"{key} has shape {case[key].shape}, x has {case['x'].shape[-1]} features"
    return None


CONTRACT = {
    "layer_norm": (
        term(
            "the hidden test uses other shapes, with any number of leading axes",
            ("x", "gamma", "beta"),
            _features,
        ),
        floats(
            "then scale by `gamma` and shift by `beta` (both of shape (d_model,))", ("x", "gamma", "beta")
        ),
    )
}
