"""What the machine can compute on: an NVIDIA GPU, and whether its CPU does bf16 natively.

vLLM's CPU build serves bf16 only where the CPU has it (emulated bf16 ran ~10x slower
than float32 on a CPU without it), and the quote ranker scores in bf16 there too.
"""

from pathlib import Path


def has_nvidia_gpu() -> bool:
    return Path("/dev/nvidia0").exists() or Path("/proc/driver/nvidia").exists()


def cpu_has_native_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether the CPU computes bf16 itself (AVX512-BF16 or AMX), as its flags in cpuinfo
    say; False where they cannot be read."""
    try:
        flags = cpuinfo.read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags
