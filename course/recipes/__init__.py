"""Fixture recipes, one module per assignment; each ``build()`` returns
``{(visibility, name): arrays}`` for :func:`course.fixtures.build`. Instructor side only."""
