"""Authoring: the recipes and fixtures, validation, the release and what is published, the bundled
samples, collection from an LMS and the worked solutions. It may use grading's formats (the judge,
feedback); grading never imports it."""
