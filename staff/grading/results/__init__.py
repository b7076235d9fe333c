"""What comes out: the score table and instructor report, grades.csv, and per-student feedback."""
