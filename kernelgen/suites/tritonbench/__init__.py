"""The reader measured on TritonBench-T (thunlp/TritonBench), read at run time: text and references nobody here wrote.

`scripts/tritonbench.py` runs it. data: the benchmark's files; probe: its reference and test, out of process;
spec_text: the spec a user would send; compare: a reading against the reference; run: the loop; report: the output.
"""
