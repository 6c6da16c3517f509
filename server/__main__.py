"""`python -m server` is `durable-responses`."""

from .cli import main

main()
