"""benchmarks/similarity_scale.py (`make similarity` at class scale), small: 40 synthetic submissions
of assignment 1 through the whole report. The synthetic set has what the benchmark promises (copies,
skeleton-only and empty submissions) and the report's cost stays far from its budget."""

from __future__ import annotations

from support import benchmark


def test_the_report_of_synthetic_submissions_finishes_in_seconds(tmp_path, capsys):
    scale = benchmark("similarity_scale")
    seconds = scale.main(["--students", "40", "--keep", str(tmp_path)])
    printed = capsys.readouterr().out
    assert "40 submissions of 01_attention: 630 pairs" in printed and "the whole report in" in printed
    assert (
        "4 with nothing written" in printed
    )  # one in twenty skeleton-only, one in twenty empty; the other 36 make 630 pairs
    assert seconds < 20  # 300 took 12.5-17 s on the course's 2-core machine, shared (the goal there: 60 s)
    assert (tmp_path / "course" / "reports" / "similarity" / "index.html").is_file()
