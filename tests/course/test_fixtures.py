"""Committed fixtures match their manifests, and a missing or tampered fixture fails with a message
that says how to fix it. (Rebuilding them is tested in tests/staff/authoring/test_fixtures.py.)"""

import shutil

import numpy as np
import pytest

from course import fixtures, paths, settings


def test_committed_fixtures_match_their_manifests():
    assert fixtures.verify(paths.fixtures_dir()) == []


def test_no_hidden_name_in_public_manifest():
    public = (paths.fixtures_dir() / "public" / fixtures.MANIFEST).read_text()
    hidden_only = {p.name for p in (paths.fixtures_dir() / "hidden").rglob("*.safetensors")} - {
        p.name for p in (paths.fixtures_dir() / "public").rglob("*.safetensors")
    }
    assert not [name for name in hidden_only if name in public]


def test_missing_fixture_says_how_to_rebuild(tmp_path, monkeypatch):
    monkeypatch.setenv(settings.FIXTURES_VARIABLE, str(tmp_path))
    with pytest.raises(fixtures.FixtureError, match=r"missing.*make fixtures"):
        fixtures.load_fixture("01_attention", "softmax")


def test_tampered_fixture_is_refused(tmp_path, monkeypatch):
    shutil.copytree(paths.fixtures_dir() / "public", tmp_path / "public")
    monkeypatch.setenv(settings.FIXTURES_VARIABLE, str(tmp_path))
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
