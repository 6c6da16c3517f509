"""durable-responses."""
