"""The sentiment data, offline or from the hub, through ``datasets.load_dataset``.

Why one function: the fine-tuning notebook must run unchanged on Colab (real SST-2 from the
Hugging Face hub) and in the autograder, CI or on a laptop without internet (the course's own
small dataset, ``data/sentiment/``). :func:`course.env.is_online` is the one switch, as for the
models; either way the result is a ``datasets.DatasetDict`` with ``train`` and ``validation``
splits and exactly the columns ``sentence`` (str) and ``label`` (0 = negative, 1 = positive), so
the notebook's tokenisation, batching and evaluation code never branches.

The offline files use GLUE SST-2's own layout (``sentence<TAB>label`` with a header), so the same
reader serves the real SST-2 files the benchmark uses (:func:`load_sst2_tsv`). They are read with
quoting and the "NA" detection turned off: pandas' defaults would turn a sentence such as
``"None"`` or ``"n/a"`` into a missing value and treat a leading ``"`` as the start of a quoted
field spanning lines, silently dropping or merging examples.
"""

from __future__ import annotations

import csv
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import datasets
from datasets import ClassLabel, Dataset, DatasetDict, Features, Value, load_dataset

from course import paths
from course.env import is_online

#: The course's offline dataset (512 training and 128 validation sentences, balanced).
SENTIMENT_DIR = paths.DATA / "sentiment"
SPLITS = ("train", "validation")
COLUMNS = ("sentence", "label")
LABEL_NAMES = ("negative", "positive")

#: Online: GLUE's SST-2 (67,349 training phrases, the 872-sentence dev set as ``validation``).
HUB_DATASET = ("nyu-mll/glue", "sst2")

#: Both sources end with these features, so the label names read the same everywhere.
FEATURES = Features({"sentence": Value("string"), "label": ClassLabel(names=list(LABEL_NAMES))})

# pandas.read_csv options (passed through datasets' csv builder): every line is one example.
_TSV_OPTIONS = dict(delimiter="\t", quoting=csv.QUOTE_NONE, keep_default_na=False, na_filter=False)


@contextmanager
def _quiet() -> Iterator[None]:
    """No "Generating train split" progress bars in the notebooks' output (restored afterwards)."""
    was_enabled = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if was_enabled:
            datasets.enable_progress_bars()


def _check_files(files: dict[str, Path]) -> None:
    missing = [str(path) for path in files.values() if not Path(path).is_file()]
    if missing:
        raise FileNotFoundError(
            f"sentiment data not found: {', '.join(missing)}. The course's own data lives in "
            f"{SENTIMENT_DIR} (restore it from the course repository), or set COURSE_ONLINE=1 to "
            f"load SST-2 from the Hugging Face hub."
        )


def _read_tsv(files: dict[str, Path]) -> DatasetDict:
    """GLUE-layout TSV files -> a DatasetDict with exactly :data:`FEATURES` (extra columns dropped)."""
    _check_files(files)
    for path in files.values():
        with open(path, encoding="utf-8") as f:
            header = f.readline().rstrip("\r\n").split("\t")
        if set(COLUMNS) - set(header):
            raise ValueError(
                f"{path} has the header {header}; expected the columns {list(COLUMNS)} "
                f"(GLUE SST-2 layout, tab-separated)"
            )
    with _quiet():
        # A private cache per call: parallel grading kernels then never share (or race on) the
        # Arrow cache of the same files; these files are small, so nothing is lost.
        with tempfile.TemporaryDirectory(prefix="course-data-") as cache:
            loaded = load_dataset(
                "csv",
                data_files={split: str(path) for split, path in files.items()},
                usecols=list(COLUMNS),
                features=FEATURES,
                cache_dir=cache,
                keep_in_memory=True,
                **_TSV_OPTIONS,
            )
    return DatasetDict({split: _standardise(dataset) for split, dataset in loaded.items()})


def _standardise(dataset: Dataset) -> Dataset:
    """Keep ``sentence`` and ``label`` only (GLUE adds ``idx``), with the shared features."""
    dataset = dataset.select_columns(list(COLUMNS))
    return dataset.cast(FEATURES) if dataset.features != FEATURES else dataset


def load_sentiment(data_dir: Path | str | None = None) -> DatasetDict:
    """``train`` and ``validation`` splits with columns ``sentence`` and ``label``.

    Offline (the default): the course's dataset in ``data_dir`` (default :data:`SENTIMENT_DIR`).
    Online (``COURSE_ONLINE=1``, the default on Colab): GLUE SST-2 from the hub, whose test split
    (no labels) is left out.
    """
    if is_online() and data_dir is None:
        with _quiet():
            hub = load_dataset(*HUB_DATASET)
            return DatasetDict({split: _standardise(hub[split]) for split in SPLITS})
    folder = Path(data_dir) if data_dir is not None else SENTIMENT_DIR
    return _read_tsv({split: folder / f"{split}.tsv" for split in SPLITS})


def load_sst2_tsv(path: Path | str) -> Dataset:
    """One GLUE SST-2 TSV file (e.g. the benchmark's local ``train.tsv``) as a Dataset."""
    return _read_tsv({"data": Path(path)})["data"]
