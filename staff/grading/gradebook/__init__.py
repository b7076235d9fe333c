"""nbgrader's gradebook: its saving steps in one session, registration, backups and the roster, its
indexes, late work, notebook repairs, and a PostgreSQL server for tests and benchmarks."""
