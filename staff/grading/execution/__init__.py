"""Running a submission: the Dask cluster and its workers, one notebook's process in its bubblewrap
sandbox (quota, scratch), and the test cells' records as the kernel leaves them. Never judges, never
writes the gradebook."""
