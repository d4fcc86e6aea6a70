"""The machine a checkpoint or a benchmark records (oro_assets.machine): two CPUs that both call themselves "AMD EPYC"
must read as two machines when they run different kernels."""

from oro_assets.machine import machine_key, machine_signature, parse_cpuinfo

# a Zen 3 box of this project (2 cores; flags cut to a few), and the Zen 4 session 38 ran on (AVX-512, bf16, VNNI)
ZEN3_CORE = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
stepping\t: 1
flags\t\t: fpu vme sse sse2 fma avx avx2 adx sha_ni
"""
ZEN3 = ZEN3_CORE + "\n" + ZEN3_CORE.replace("processor\t: 0", "processor\t: 1")
ZEN4 = ZEN3.replace("model\t\t: 1\n", "model\t\t: 17\n").replace(
    "avx2 adx", "avx2 avx512f avx512dq avx512_vnni avx512_bf16 adx")


def test_the_cpu_is_read_from_its_family_model_and_vector_flags():
    assert parse_cpuinfo(ZEN3) == {"cpu": "AMD EPYC", "vendor": "AuthenticAMD", "family": 25, "model": 1,
                                   "stepping": 1, "vector_flags": ["avx2"]}
    zen4 = parse_cpuinfo(ZEN4)
    assert (zen4["model"], zen4["vector_flags"]) == (17, ["avx2", "avx512f", "avx512_bf16", "avx512_vnni"])


def test_two_epycs_with_other_kernels_get_two_keys():
    zen3 = machine_signature(with_torch=False, cpuinfo=ZEN3)
    zen4 = machine_signature(with_torch=False, cpuinfo=ZEN4)
    assert zen3["key"] == "AMD EPYC, family 25 model 1, avx2"
    assert zen4["key"] == "AMD EPYC, family 25 model 17, avx512f avx512_bf16 avx512_vnni"
    assert machine_key({**zen3, "cuda_device": "NVIDIA H100 80GB HBM3"}).endswith("+ NVIDIA H100 80GB HBM3")


def test_a_cpuinfo_without_x86_fields_still_names_the_machine():
    sig = machine_signature(with_torch=False, cpuinfo="processor\t: 0\nHardware\t: BCM2835\n")
    assert (sig["cpu"], sig["family"], sig["vector_flags"]) == ("BCM2835", None, [])
    assert sig["key"] == "BCM2835"


def test_torch_is_described_by_the_kernels_it_dispatches_to():
    import torch

    sig = machine_signature(cpuinfo=ZEN3)
    assert sig["torch"] == torch.__version__
    assert sig["torch_cpu_capability"] in {"DEFAULT", "NO AVX", "AVX2", "AVX512", "ZVECTOR", "VSX", "SVE256", "SVE"}
    assert sig["torch_threads"] == torch.get_num_threads()
