"""Test support shared by every suite: servers (in-process and subprocess), SSE parsing,
PostgreSQL databases (fresh ones on the machine's server, or a server of the test's own).

Nothing here is imported by `server/` or `bench/`; the protocol's own constants (terminal
event types, statuses) come from `server.protocol` so tests and server cannot disagree.
"""
