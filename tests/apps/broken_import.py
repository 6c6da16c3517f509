"""A module that fails while it is imported (not an ImportError)."""

raise KeyError("OPENAI_API_KEY")
