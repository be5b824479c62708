"""The one settings object: environment variables (KERNELGEN_*) and `.env`."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict

DATA_DIR = Path.home() / ".kernelgen"


class Settings(BaseSettings):
    """Where data lives, how long generated code may run, and how the service is exposed."""

    model_config = SettingsConfigDict(env_prefix="KERNELGEN_", env_file=".env", extra="ignore")

    database_url: str = f"sqlite:///{DATA_DIR / 'kernelgen.db'}"
    # LangGraph checkpoints; None keeps them beside the database (a SQLite file, or the same PostgreSQL).
    checkpoint_url: str | None = None
    work_dir: Path = DATA_DIR / "work"
    artifact_root: Path = DATA_DIR / "jobs"  # the service writes each job's folder under here
    accuracy_timeout_s: float = 900.0
    performance_timeout_s: float = 900.0
    profile_timeout_s: float = 300.0
    # Start every job from this configuration, e.g. "flat: BLOCK_SIZE=256, NUM_WARPS=8" (tests the loop).
    initial_config: str | None = None

    host: str = "127.0.0.1"
    port: int = 8000
    api_tokens: list[str] = []  # bearer tokens; required unless the server binds to loopback only
    concurrency: int = 2  # jobs run at once; profiling stages still take one accelerator at a time
    max_request_bytes: int = 256 * 1024
    max_spec_bytes: int = 64 * 1024
    cors_origins: list[str] = []

    llm_base_url: str | None = None  # an OpenAI-compatible endpoint; None uses the offline generator
    llm_model: str | None = None
    llm_api_key: str | None = None
