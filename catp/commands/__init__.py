"""CLI commands; each module has `register(app)` (catp/cli.py calls them). They import the library (pipeline,
batch, backends, serve) inside the command, so `catp --help` stays fast; nothing in the library imports them."""
