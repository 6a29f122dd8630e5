from catp.cli import run

run()
