"""Real-agent scenario apps (agent-framework agents and orchestrations on the fake model) and their tests."""
