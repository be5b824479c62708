"""Where kernels come from: the offline templates, later an LLM."""
