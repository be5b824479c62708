"""KernelGen: from a plain-language operator spec to a verified Triton kernel."""

__version__ = "0.1.0"
