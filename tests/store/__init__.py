"""Store-layer tests: one conformance suite that both dialects (SQLite, PostgreSQL) must pass."""
