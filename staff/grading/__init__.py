"""Grading: the batch at this level (``autograde``, ``batch``, ``canary``, ``regrade``, ``status``),
the folders below by role, in the order a submission meets them: ``execution``, ``judging``,
``gradebook``, then ``results`` and ``review``; ``integrity`` flags what the judge cannot tell apart."""
