"""Sample submissions: a typo in a cell name or a missing expected score fails loudly."""
import pytest

from staff.authoring import samples


def test_samples_refuse_unknown_answer_cells(tmp_path):
    path = tmp_path / "typo.py"
    path.write_text("# expected_score: 0\n# %% softmaxx\nx = 1\n")
    sample = samples.parse(path, "01_attention")
    with pytest.raises(KeyError, match="softmaxx"):
        samples.fill(sample)


def test_samples_need_an_expected_score(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("# %% softmax\nx = 1\n")
    with pytest.raises(ValueError, match="expected_score"):
        samples.parse(path, "01_attention")
