"""Course tooling: one module per job (see README's "Layout")."""
