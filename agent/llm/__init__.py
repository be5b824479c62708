"""Kernel generation through any OpenAI-compatible chat-completions endpoint."""
