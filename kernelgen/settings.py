"""The one settings object: environment variables (KERNELGEN_*) and `.env`."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
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

    # How generated code is confined (agent/runtime/isolation.py, docs/security.md).
    sandbox_bwrap: str = "bwrap"  # the bubblewrap binary
    # Where bubblewrap cannot start, run model-written code anyway, without isolation (logged loudly).
    sandbox_allow_unisolated: bool = False
    sandbox_uid: int = Field(default=65534, ge=1, le=2**32 - 2)  # the uid runs take when the service runs as root
    sandbox_max_processes: int = Field(default=512, ge=8)  # per run, threads included
    sandbox_max_open_files: int = Field(default=4096, ge=64)
    sandbox_max_file_mb: int = Field(default=4096, ge=1)
    sandbox_memory_mb: int | None = Field(default=16384, ge=256)  # address space per process, CPU runs only
    sandbox_tmp_mb: int = Field(default=1024, ge=16)
    sandbox_read_only_paths: list[Path] = []  # more folders runs may read (a toolkit outside /usr)
    sandbox_run_memory_mb: int | None = Field(default=16384, ge=64)  # a run's resident memory, all its processes
    sandbox_run_disk_mb: int | None = Field(default=8192, ge=1)  # a run's folder, all its files together
    sandbox_cgroup: Path | None = None  # a delegated cgroup v2 folder for runs; None: the service's own, if it can
    sandbox_compile_cache: bool = True  # a job's runs share the kernels they compiled (Triton's cache)
    # A job's next run already started, torch imported: auto on GPUs and NPUs, on everywhere, or off
    sandbox_warm_start: Literal["auto", "on", "off"] = "auto"
    keep_work_dirs: bool = False  # keep a job's sandbox folders after it ends (artifacts are in the database anyway)

    host: str = "127.0.0.1"
    port: int = 8000
    # Bearer tokens, "name:token" (the principal's name) or a bare token (a principal named after its hash);
    # required unless the server binds to loopback only. Tokens can also live in the users table (kernelgen users).
    api_tokens: list[str] = []
    api_admins: list[str] = []  # principals that see and cancel every job
    keep_alive_timeout_s: int = Field(default=5, ge=1)  # an idle kept-alive connection is closed after this
    header_timeout_s: float = Field(default=10.0, gt=0)  # a request's headers must arrive within this
    # Jobs run at once; 0: two, or one per accelerator where there are more. Each stage that runs kernels holds one
    # accelerator, so jobs beyond the accelerators' count overlap only their other stages.
    concurrency: int = Field(default=0, ge=0)
    # Where queued jobs run: this process's worker threads, or a Ray cluster (ray_address, else RAY_ADDRESS).
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    ray_max_retries: int = Field(default=3, ge=0, le=10)  # a job whose Ray worker died runs again from its checkpoint
    # The id this server records on the jobs it runs ("server:<id>"); its recovery resumes those only. Empty: an id
    # made at the first start and kept in artifact_root/.server-id. Servers sharing a database need their own ids.
    server_id: str = ""
    max_request_bytes: int = 256 * 1024
    max_spec_bytes: int = 64 * 1024
    # Sandboxed runs at once (agent/runtime/admission.py): reads, chat and jobs share them; 0: one per CPU, at least 4.
    max_sandboxes: int = Field(default=0, ge=0)
    max_sandboxes_per_principal: int = Field(default=0, ge=0)  # a caller's reads at once; 0: half of max_sandboxes
    read_deadline_s: float = Field(default=300.0, gt=0)  # a read (POST /read, a chat message) answers 504 past this
    cors_origins: list[str] = []

    # Which generator writes kernels: auto takes the LLM when an endpoint and model are set, else offline.
    llm: Literal["auto", "offline", "openai"] = "auto"
    # The offline engines that may write a first version; an op of a family left out goes to the LLM (or is refused).
    offline_engines: list[Literal["elementwise", "rows", "matmul", "attention", "conv"]] = [
        "elementwise", "rows", "matmul", "attention", "conv"]
    llm_base_url: str | None = None  # an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8001/v1
    llm_model: str | None = None
    llm_api_key: str | None = None  # local servers (vLLM, Ollama) accept any value
    llm_timeout_s: float = 300.0  # per request
    llm_max_retries: int = 2  # the openai client's retries on connection errors, 429 and 5xx
    llm_temperature: float = 0.2
    llm_max_tokens: int = 8192
    # How replies that must be JSON are asked for: auto tries a JSON schema, then JSON mode, then plain text.
    llm_structured: Literal["auto", "json_schema", "json_object", "none"] = "auto"
    llm_max_reasks: int = Field(default=2, ge=0, le=5)  # re-asks after an answer that is not the JSON or code
    llm_max_repairs: int = Field(default=3, ge=0, le=5)  # repair attempts per version that fails to run or to pass
