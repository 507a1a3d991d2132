"""Which precision the machine computes in: a CPU's bf16 flags as /proc/cpuinfo lists them."""

from pathlib import Path

from webgpt.infra.hardware import cpu_has_native_bf16


def test_a_cpu_has_native_bf16_where_its_flags_say_so(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    for flags, native in [
        ("fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni", True),
        ("fpu sse2 avx2 amx_bf16 amx_tile", True),
        ("fpu sse2 avx2 avx512f avx512_vnni", False),  # AVX-512 without its bf16 part
    ]:
        cpuinfo.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
        assert cpu_has_native_bf16(cpuinfo) is native, flags
    assert cpu_has_native_bf16(tmp_path / "absent") is False
