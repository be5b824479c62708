"""A code spec's operator is named after its function, unless the name says only what the code is for."""

from agent.reader import read_spec


def _spec(function: str) -> str:
    return f"x [64, 32] float32\n\n```python\ndef {function}(x):\n    return torch.relu(x) * 2\n```\n"


def test_a_function_named_reference_gives_its_name_to_nothing() -> None:
    assert read_spec(_spec("reference")).name == "relu"


def test_a_function_with_a_name_of_its_own_names_the_operator() -> None:
    assert read_spec(_spec("double_relu")).name == "double_relu"
