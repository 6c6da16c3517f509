"""What an operator runs or reads: health, retention, stats, migrations, start-up checks, the admin reads."""
