"""The offline generator: each operator goes to the engine of its family (elementwise, or the row engine)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from agent.generators.base import ConfigSpace, KernelFiles, LaunchConfig, Schedule
from agent.generators.offline.attention.generator import AttentionGenerator
from agent.generators.offline.conv.generator import ConvGenerator
from agent.generators.offline.elementwise import ElementwiseGenerator
from agent.generators.offline.matmul.generator import MatmulGenerator
from agent.generators.offline.rows.generator import RowGenerator
from agent.ir.family import family_of
from agent.runtime.devices import DeviceInfo
from agent.spec import OpSpec

Engine = ElementwiseGenerator | RowGenerator | MatmulGenerator | AttentionGenerator | ConvGenerator
# Families whose ops the row engine lowers (an elementwise chain around them included).
ROW_FAMILIES = frozenset({"reduction", "softmax", "norm", "scan", "loss"})
_WRITES = {"elementwise": "elementwise and broadcast chains", "rows": "reductions, softmax, norms, scans",
           "matmul": "matrix products with fused epilogues", "attention": "scaled dot-product attention",
           "conv": "2-D convolutions"}


class OfflineGenerator:
    """Write kernels from templates, without a model: elementwise chains, row reductions, products, attention."""

    def __init__(self, engines: Collection[str] = ("elementwise", "rows", "matmul", "attention", "conv")) -> None:
        self.elementwise = ElementwiseGenerator()
        self.rows = RowGenerator()
        self.matmul = MatmulGenerator()
        self.attention = AttentionGenerator()
        self.conv = ConvGenerator()
        self.engines = frozenset(engines)

    def engine(self, spec: OpSpec) -> Engine:
        """Return the engine that writes this spec."""
        if spec.category != "custom":
            family = family_of(spec.expr)
            if family in ROW_FAMILIES:
                return self.rows
            if family == "matmul":
                return self.matmul
            if family == "attention":
                return self.attention
            if family == "conv":
                return self.conv
        return self.elementwise

    def refusal(self, spec: OpSpec) -> str | None:
        """Say why the offline generator cannot write the spec (None when it can)."""
        engine = self.engine(spec)
        if engine.family not in self.engines:
            return (f"the offline {engine.family} engine ({_WRITES[engine.family]}) is turned off by "
                    "KERNELGEN_OFFLINE_ENGINES")
        return engine.refusal(spec)

    def generate(self, spec: OpSpec, config: LaunchConfig) -> KernelFiles:
        """Write the four files for a spec at a launch configuration."""
        return self.engine(spec).generate(spec, config)

    def category(self, spec: OpSpec) -> str:
        """Name the pattern category the spec's optimizations are filed under."""
        return self.engine(spec).category(spec)

    def interpreter_max_elements(self, spec: OpSpec) -> int:
        """Return the largest case the Triton interpreter checks for the spec's kernel."""
        return self.engine(spec).interpreter_max_elements(spec)

    def schedules(self, spec: OpSpec) -> list[Schedule]:
        """List the schedules of the spec's engine, the default first."""
        return self.engine(spec).schedules(spec)

    def default_config(self, spec: OpSpec, schedule: Schedule, device: DeviceInfo) -> LaunchConfig:
        """Return the usual best configuration of a schedule."""
        return self.engine(spec).default_config(spec, schedule, device)

    def config_space(self, spec: OpSpec, schedule: Schedule, device: DeviceInfo,
                     preferred: Sequence[LaunchConfig] = ()) -> ConfigSpace:
        """List the configurations of a schedule worth measuring."""
        return self.engine(spec).config_space(spec, schedule, device, preferred)
