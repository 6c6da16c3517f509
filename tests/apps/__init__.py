"""Apps the crash tests run in a server subprocess (``--app tests.apps.workflows:NAME``)."""
