"""Creating a response and the turn it continues: admission, the stored request, history and conversations."""
