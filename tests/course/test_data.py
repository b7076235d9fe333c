"""course.data: the sentiment data offline (the course's files) and online (the hub, mocked here:
no test reaches the network)."""

from __future__ import annotations

import csv
from collections import Counter

import pytest
from datasets import Dataset, DatasetDict

from course import data, settings


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv(settings.ONLINE_VARIABLE, "0")


def _rows(path):
    """Every example of a TSV file, read independently of datasets/pandas."""
    with open(path, newline="", encoding="utf-8") as f:
        return [
            (r["sentence"], int(r["label"]))
            for r in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        ]


def _write_tsv(path, rows, header=("sentence", "label")):
    path.write_text("\t".join(header) + "\n" + "".join(f"{s}\t{y}\n" for s, y in rows), encoding="utf-8")


def test_offline_splits_counts_balance_and_columns(offline):
    sentiment = data.load_sentiment()
    assert isinstance(sentiment, DatasetDict)
    assert sorted(sentiment) == ["train", "validation"]
    for split, size in (("train", 512), ("validation", 128)):
        dataset = sentiment[split]
        assert dataset.column_names == ["sentence", "label"]
        assert len(dataset) == size
        assert Counter(dataset["label"]) == {0: size // 2, 1: size // 2}
        assert dataset.features["label"].names == ["negative", "positive"]


def test_offline_loses_and_changes_no_sentence(offline):
    sentiment = data.load_sentiment()
    for split in ("train", "validation"):
        expected = _rows(data.SENTIMENT_DIR / f"{split}.tsv")
        got = list(zip(sentiment[split]["sentence"], sentiment[split]["label"]))
        assert got == expected
        assert all(isinstance(s, str) and s.strip() for s, _ in got)


def test_sentences_pandas_would_mangle_survive(tmp_path, offline):
    """NA-like words and stray double quotes stay sentences (pandas' defaults would drop or merge them)."""
    tricky = [
        ("NA", 0),
        ("None", 1),
        ("null", 0),
        ('He said "wow and left', 1),
        ("n/a", 0),
        ('"Quoted start', 1),
        ("nan", 0),
        ("plain sentence", 1),
    ]
    _write_tsv(tmp_path / "train.tsv", tricky)
    _write_tsv(tmp_path / "validation.tsv", tricky[:2])
    sentiment = data.load_sentiment(tmp_path)
    assert list(zip(sentiment["train"]["sentence"], sentiment["train"]["label"])) == tricky
    assert len(sentiment["validation"]) == 2


def test_extra_columns_are_dropped(tmp_path, offline):
    (tmp_path / "train.tsv").write_text("idx\tsentence\tlabel\n0\tgood\t1\n1\tbad\t0\n")
    (tmp_path / "validation.tsv").write_text("sentence\tlabel\tnote\nfine\t1\tx\n")
    sentiment = data.load_sentiment(tmp_path)
    assert sentiment["train"].column_names == ["sentence", "label"]
    assert sentiment["train"]["sentence"] == ["good", "bad"]
    assert sentiment["validation"].column_names == ["sentence", "label"]


def test_missing_file_is_a_clear_error(tmp_path, offline):
    _write_tsv(tmp_path / "train.tsv", [("good", 1)])
    with pytest.raises(FileNotFoundError, match=r"validation\.tsv.*COURSE_ONLINE=1"):
        data.load_sentiment(tmp_path)
    with pytest.raises(FileNotFoundError, match="nowhere.tsv"):
        data.load_sst2_tsv(tmp_path / "nowhere.tsv")


def test_wrong_header_is_a_clear_error(tmp_path, offline):
    _write_tsv(tmp_path / "train.tsv", [("good", 1)], header=("text", "label"))
    _write_tsv(tmp_path / "validation.tsv", [("good", 1)])
    with pytest.raises(ValueError, match="expected the columns"):
        data.load_sentiment(tmp_path)


def test_load_sst2_tsv_reads_glue_layout(tmp_path):
    rows = [("it 's a charming and often affecting journey . ", 1), ("unflinchingly bleak and desperate ", 0)]
    _write_tsv(tmp_path / "dev.tsv", rows)
    dataset = data.load_sst2_tsv(tmp_path / "dev.tsv")
    assert isinstance(dataset, Dataset)
    assert list(zip(dataset["sentence"], dataset["label"])) == rows  # trailing spaces kept, as in GLUE


def test_online_loads_glue_sst2_through_datasets(monkeypatch):
    """Online, the hub's GLUE SST-2 is asked for, its idx column and test split are dropped."""
    calls = []

    def fake_load_dataset(*args, **kwargs):
        calls.append((args, kwargs))

        def split(n):
            return Dataset.from_dict(
                {
                    "sentence": [f"s{i}" for i in range(n)],
                    "label": [i % 2 for i in range(n)],
                    "idx": list(range(n)),
                }
            )

        return DatasetDict({"train": split(6), "validation": split(4), "test": split(3)})

    monkeypatch.setenv(settings.ONLINE_VARIABLE, "1")
    monkeypatch.setattr(data, "load_dataset", fake_load_dataset)
    sentiment = data.load_sentiment()
    assert calls == [(data.HUB_DATASET, {})]
    assert data.HUB_DATASET == ("nyu-mll/glue", "sst2")
    assert sorted(sentiment) == ["train", "validation"]
    assert sentiment["train"].column_names == ["sentence", "label"]
    assert sentiment["train"].features == data.FEATURES
    assert (len(sentiment["train"]), len(sentiment["validation"])) == (6, 4)


def test_offline_never_calls_the_hub(monkeypatch, offline):
    seen = []
    real = data.load_dataset

    def recording(*args, **kwargs):
        seen.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(data, "load_dataset", recording)
    data.load_sentiment()
    assert seen == ["csv"]
