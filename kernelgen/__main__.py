"""Allow `python -m kernelgen`."""

from kernelgen.cli import app

app()
