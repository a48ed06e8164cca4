"""Machine descriptions for the ``mncore`` dialect, selectable by name.

The topology and memory sizes of ``mncore2`` are MN-Core 2's public figures
(``../shared/reference/mncore.md``); latencies and per-step widths follow the
reference's simulated-machine model ([model]) where the hardware's are not public.
``tiny`` keeps the same rules on a small tree and small memories, for tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

#: Memories of one PE, readable and writable by the ALU, the MAU and L1 transfers.
PE_SPACES = ("lm0", "lm1", "grf0", "grf1")
#: Every memory space, from the PE up.
SPACES = (*PE_SPACES, "l1bm", "l2bm", "dram")


@dataclass(frozen=True)
class Machine:
    """Topology, memory sizes (64-bit words; one value per word in this model),
    latencies (steps) and per-step widths. One step is one VLIW bundle = 4 cycles."""

    name: str
    groups: int
    l2b_per_group: int
    l1b_per_l2b: int
    mab_per_l1b: int
    pe_per_mab: int
    lm_words: int = 2048
    grf_words: int = 256
    l1bm_words: int = 8192
    l2bm_words: int = 32768
    dram_words: int = 1 << 31
    alu_latency: int = 3
    """An ALU or MAU result written at step s is readable from LM/GRF at s + 3."""
    lm_write_blocks_reads: int = 2
    """After a write to an LM, that LM cannot be read for this many steps."""
    l1_latency: int = 3
    l2_latency: int = 4
    l2_words_per_step: int = 64
    """L2BM <-> L1BM words per step (16 words/cycle)."""
    dma_setup_cycles: int = 100
    dma_words_per_cycle: int = 16
    mau_fma_per_cycle_per_mab: int = 16
    """[model] the MAU multiplies a 4x4 matrix by a 4-vector per PE per step."""

    @property
    def pes(self) -> int:
        return prod((self.groups, self.l2b_per_group, self.l1b_per_l2b, self.mab_per_l1b,
                     self.pe_per_mab))

    @property
    def pes_per_l1b(self) -> int:
        return self.mab_per_l1b * self.pe_per_mab

    @property
    def l1bs(self) -> int:
        return self.groups * self.l2b_per_group * self.l1b_per_l2b

    @property
    def l2bs(self) -> int:
        return self.groups * self.l2b_per_group

    def size(self, space: str) -> int:
        return {"lm0": self.lm_words, "lm1": self.lm_words, "grf0": self.grf_words,
                "grf1": self.grf_words, "l1bm": self.l1bm_words, "l2bm": self.l2bm_words,
                "dram": self.dram_words}[space]

    @property
    def peak_flops_per_cycle(self) -> int:
        return 2 * self.mau_fma_per_cycle_per_mab * self.pes // self.pe_per_mab

    def describe(self) -> str:
        groups = f"{self.groups} group" + ("s" if self.groups > 1 else "")
        return (f"{self.name}: {groups} x {self.l2b_per_group} L2B x "
                f"{self.l1b_per_l2b} L1B x {self.mab_per_l1b} MAB x {self.pe_per_mab} PE = "
                f"{self.pes} PEs; LM {self.lm_words}, GRF {self.grf_words}, L1BM "
                f"{self.l1bm_words}, L2BM {self.l2bm_words} words")


MACHINES = {
    "mncore2": Machine("mncore2", 4, 2, 8, 16, 4),
    "tiny": Machine("tiny", 1, 1, 2, 4, 4, lm_words=256, grf_words=64, l1bm_words=1024,
                    l2bm_words=4096, dram_words=1 << 20, dma_setup_cycles=8),
}
