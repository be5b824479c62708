"""The LangGraph agent: spec, stages, generators and the runtime for generated code."""
