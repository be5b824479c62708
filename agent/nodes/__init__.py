"""One file per stage of a job; graph.py wires them."""
