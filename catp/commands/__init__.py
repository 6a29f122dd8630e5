"""CLI commands; each module has `register(app)`."""
