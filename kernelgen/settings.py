"""The one settings object: environment variables (KERNELGEN_*) and `.env`."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict

DATA_DIR = Path.home() / ".kernelgen"


class Settings(BaseSettings):
    """Where data lives and how long generated code may run."""

    model_config = SettingsConfigDict(env_prefix="KERNELGEN_", env_file=".env", extra="ignore")

    database_url: str = f"sqlite:///{DATA_DIR / 'kernelgen.db'}"
    work_dir: Path = DATA_DIR / "work"
    accuracy_timeout_s: float = 900.0
    performance_timeout_s: float = 900.0
    profile_timeout_s: float = 300.0
    # Start every job from this configuration, e.g. "flat: BLOCK_SIZE=256, NUM_WARPS=8" (tests the loop).
    initial_config: str | None = None
