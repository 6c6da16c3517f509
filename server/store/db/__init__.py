"""The databases themselves: URLs and engines, PostgreSQL's connections, auth, LISTEN and liveness
locks, SQLite's lock file, in-process wake-ups.
"""
