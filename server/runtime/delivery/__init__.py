"""What leaves the host after a commit: relays of committed events, webhooks, a creation's one-call answer."""
