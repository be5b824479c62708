"""Test-wide setup: the Triton interpreter (no GPU in CI) and a private data folder."""

import os

# Must be set before anything imports triton.
os.environ["TRITON_INTERPRET"] = "1"
os.environ["KERNELGEN_DEVICE"] = "cpu"
