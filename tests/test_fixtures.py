"""Fixtures regenerate deterministically (values, within BLAS rounding), match their manifests,
and a missing or tampered fixture fails with a message that says how to fix it."""
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file

from course import fixtures, paths


def test_committed_fixtures_match_their_manifests():
    assert fixtures.verify(paths.fixtures_dir()) == []


@pytest.mark.parametrize("assignment", sorted(fixtures.RECIPES))
def test_regenerated_fixtures_equal_committed_ones(tmp_path, assignment):
    fixtures.build(tmp_path, [assignment])
    for visibility in ("public", "hidden"):
        committed = sorted((paths.fixtures_dir() / visibility / assignment).glob("*.safetensors"))
        fresh = sorted((tmp_path / visibility / assignment).glob("*.safetensors"))
        assert [p.name for p in fresh] == [p.name for p in committed], f"{visibility} file list changed"
        for new, old in zip(fresh, committed):
            a, b = load_file(str(new)), load_file(str(old))
            assert a.keys() == b.keys(), new.name
            for key in a:
                assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape, (new.name, key)
                np.testing.assert_allclose(a[key], b[key], rtol=1e-6, atol=1e-7, err_msg=f"{new.name}:{key}")
    assert fixtures.verify(tmp_path) == []


def test_no_hidden_name_in_public_manifest():
    public = (paths.fixtures_dir() / "public" / fixtures.MANIFEST).read_text()
    hidden_only = {p.name for p in (paths.fixtures_dir() / "hidden").rglob("*.safetensors")} - {
        p.name for p in (paths.fixtures_dir() / "public").rglob("*.safetensors")}
    assert not [name for name in hidden_only if name in public]


def test_missing_fixture_says_how_to_rebuild(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.FIXTURES_VARIABLE, str(tmp_path))
    with pytest.raises(fixtures.FixtureError, match=r"missing.*make fixtures"):
        fixtures.load_fixture("01_attention", "softmax")


def test_tampered_fixture_is_refused(tmp_path, monkeypatch):
    shutil.copytree(paths.fixtures_dir() / "public", tmp_path / "public")
    monkeypatch.setenv(paths.FIXTURES_VARIABLE, str(tmp_path))
    target = tmp_path / "public" / "01_attention" / "softmax.safetensors"
    data = bytearray(target.read_bytes())
    data[-1] ^= 0xFF
    target.write_bytes(bytes(data))
    with pytest.raises(fixtures.FixtureError, match="does not match"):
        fixtures.load_fixture("01_attention", "softmax")
    assert any("softmax" in p for p in fixtures.verify(tmp_path))


def test_cases_round_trip():
    cases = [{"x": np.arange(3.0), "axis": np.array(0)}, {"x": np.ones((2, 2)), "axis": np.array(-1)}]
    packed = fixtures.pack_cases(cases)
    assert sorted(packed) == ["0.axis", "0.x", "1.axis", "1.x"]
