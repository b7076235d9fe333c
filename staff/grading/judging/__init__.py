"""The judge outside the kernel: each test cell's checks (built from the instructor's run) compared
with values the kernel never had, and the points and reasons they pay."""
