"""`python -m durable_responses` is `durable-responses`."""

from .cli import main

main()
