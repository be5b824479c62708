"""`local` names the user of a server without tokens: no configured token may take that name."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelgen.settings import Settings
from server.app import create_app


def test_a_configured_token_named_local_stops_the_app_before_it_starts(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, database_url=f"sqlite:///{tmp_path / 'kg.db'}",  # type: ignore[call-arg]
                        api_tokens=["alice:tok-a", "Local:tok-l"])
    with pytest.raises(ValueError, match="Local is a reserved principal name"):
        create_app(settings)
    assert not (tmp_path / "kg.db").exists()  # refused before the service opened anything
