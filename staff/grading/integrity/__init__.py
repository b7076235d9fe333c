"""What the grader cannot tell apart, flagged by name for staff: the static scan of answer cells
(library implementations, shortcuts), and similarity between submissions with its page."""
