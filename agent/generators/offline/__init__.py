"""The built-in generator for the op families it knows."""
