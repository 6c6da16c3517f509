"""The outbox: every run-path write group-committed, as one batch rendered per dialect."""
