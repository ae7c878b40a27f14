"""helpers.devices: device and dtype choice, GPU peaks, SDPA's backend, free memory, the out-of-memory search.

The CUDA logic is exercised without a GPU: torch.cuda's answers are replaced by
stand-ins, and running out of memory is simulated by functions that raise.
"""
from pathlib import Path

import pytest
import torch

from helpers import devices
from helpers.benchmarking import make_qkv

# ---------------------------------------------------------------- devices, dtypes, messages

@pytest.mark.parametrize("name, dtype", [("fp32", torch.float32), ("bf16", torch.bfloat16),
                                         ("float16", torch.float16), (torch.float64, torch.float64)])
def test_resolve_dtype(name, dtype):
    assert devices.resolve_dtype(name) is dtype


def test_resolve_dtype_refuses_float8():
    with pytest.raises(ValueError, match="not supported for timing"):
        devices.resolve_dtype("float8")


def test_resolve_device_without_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert devices.resolve_device("auto") == torch.device("cpu")
    assert devices.resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(RuntimeError, match="device 'cuda' was asked for, but this PyTorch"):
        devices.resolve_device("cuda")
    with pytest.raises(ValueError, match="Unknown device 'tpu'"):
        devices.resolve_device("tpu")
    with pytest.raises(TypeError, match="device should be"):
        devices.resolve_device(0)


def test_skip_message_says_why(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(devices, "_mps_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", None)
    message = devices.cuda_skip_message()
    assert message.startswith("No CUDA GPU here: this PyTorch")
    assert "CPU-only build" in message and "runs on the CPU instead" in message
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    assert "supports CUDA 12.8, but no GPU or driver was found" in devices.cuda_skip_message()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert devices.cuda_skip_message() is None


def test_skip_message_on_an_apple_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", None)
    monkeypatch.setattr(devices, "_mps_available", lambda: True)
    message = devices.cuda_skip_message()
    assert "Apple GPU (MPS), which is present but not timed" in message
    assert "CPU-only build" not in message


@pytest.mark.parametrize("bf16, capability, half", [
    (True, (9, 0), "bfloat16"),   # H100
    (True, (8, 0), "bfloat16"),   # A100
    (True, (7, 5), "float16"),    # T4: is_bf16_supported() says True, but only emulates bf16
    (True, (7, 0), "float16"),    # V100
    (False, (8, 6), "float16"),
])
def test_default_dtypes(monkeypatch, bf16, capability, half):
    assert devices.default_dtypes("cpu") == ["float32"]
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: bf16)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a, **k: capability)
    assert devices.default_dtypes("cuda") == [half, "float32"]


def test_peak_tflops_for_known_gpus():
    assert devices.peak_tflops_for("NVIDIA H200") == 989.0
    assert devices.peak_tflops_for("NVIDIA GH200 480GB") == 989.0
    assert devices.peak_tflops_for("NVIDIA H100 80GB HBM3") == 989.0  # the SXM module's name
    assert devices.peak_tflops_for("NVIDIA H100 PCIe") == 756.0
    assert devices.peak_tflops_for("NVIDIA H100 NVL") is None          # unsure: not claimed
    assert devices.peak_tflops_for("NVIDIA A100-SXM4-80GB") == 312.0
    assert devices.peak_tflops_for("NVIDIA A100 80GB PCIe") == 312.0
    assert devices.peak_tflops_for("NVIDIA GeForce RTX 4090") is None
    with pytest.raises(TypeError, match="gpu_name should be a string"):
        devices.peak_tflops_for(None)


def test_published_numbers_are_compared_with_their_own_gpu():
    assert devices.PUBLISHED_TFLOPS["FlashAttention-3 on H100, fp16 (up to)"] == (740, "H100 SXM")
    lines = devices.published_lines()
    assert "230 TFLOP/s = 73.7% of the A100's 312" in lines[0]
    assert "335 TFLOP/s = 33.9% of the H100 SXM's 989" in lines[1]
    assert "740 TFLOP/s = 74.8% of the H100 SXM's 989" in lines[2]



# ---------------------------------------------------------------- backend

def test_sdpa_backend_on_the_cpu():
    Q, K, V = make_qkv(2, 16, 8)
    assert devices.sdpa_backend(Q, K, V) == "flash"
    assert devices.sdpa_backend(Q[0], K[0], V[0]) == "math (unfused)"  # 3-D inputs: no fused CPU kernel


def test_backend_labels_and_missing_dispatcher(monkeypatch):
    from torch.nn.attention import SDPBackend

    assert devices.backend_label(int(SDPBackend.FLASH_ATTENTION)) == "flash"
    assert devices.backend_label(int(SDPBackend.EFFICIENT_ATTENTION)) == "memory-efficient"
    assert devices.backend_label(int(SDPBackend.CUDNN_ATTENTION)) == "cuDNN"
    assert devices.backend_label(int(SDPBackend.MATH)) == "math (unfused)"
    assert devices.backend_label(99) == "unknown backend 99"
    Q, K, V = make_qkv(1, 4, 4)
    monkeypatch.delattr(torch, "_fused_sdp_choice")
    assert devices.sdpa_backend(Q, K, V) == "unknown"


# ---------------------------------------------------------------- largest T and free memory

def fake_run(limit):
    tried = []

    def run(T):
        tried.append(T)
        if T > limit:
            raise torch.cuda.OutOfMemoryError(f"CUDA out of memory at T={T}")
        return T

    return run, tried


def test_find_largest_T_stops_at_the_first_out_of_memory():
    run, tried = fake_run(3000)
    cleaned = []
    assert devices.find_largest_T(run, [1024, 4096, 2048, 8192], cleanup=lambda: cleaned.append(1)) == (2048, 4096)
    assert tried == [1024, 2048, 4096]
    assert len(cleaned) == 3
    run, _ = fake_run(10**9)
    assert devices.find_largest_T(run, [1, 2]) == (2, None)
    run, _ = fake_run(0)
    assert devices.find_largest_T(run, [1, 2]) == (None, 1)


def test_find_largest_T_lets_other_errors_through():
    def broken(T):
        raise ValueError("a bug, not a memory limit")

    with pytest.raises(ValueError, match="a bug"):
        devices.find_largest_T(broken, [1])

    def shape_bug(T):
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied")

    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        devices.find_largest_T(shape_bug, [1])


def test_a_cublas_allocation_failure_counts_as_out_of_memory():
    def run(T):
        if T > 2:
            raise RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")
        return T

    assert devices.find_largest_T(run, [1, 2, 4]) == (2, 4)
    assert devices.is_out_of_memory(torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 4 GiB"))
    assert devices.is_out_of_memory(RuntimeError("CUDA error: out of memory"))
    assert not devices.is_out_of_memory(RuntimeError("No available kernel. Aborting execution."))
    assert not devices.is_out_of_memory(ValueError("out of memory"))


def test_find_largest_T_cleans_up_after_the_traceback_is_gone():
    """empty_cache inside the except block would run while the traceback still holds the big tensors."""
    import weakref

    held = []

    def run(T):
        big = torch.zeros(T)
        held.append(weakref.ref(big))
        raise torch.cuda.OutOfMemoryError("stand-in")

    alive_at_cleanup = []
    devices.find_largest_T(run, [8], cleanup=lambda: alive_at_cleanup.append(held[-1]() is not None))
    assert alive_at_cleanup == [False]


def test_search_largest_T_doubles_then_bisects():
    run, tried = fake_run(45_000)
    ok, bad = devices.search_largest_T(run, start=1024, limit=2**20, refine_to=1024)
    assert ok <= 45_000 < bad and bad - ok <= 1024
    assert tried[:7] == [1024, 2048, 4096, 8192, 16384, 32768, 65536]
    run, _ = fake_run(10**9)
    assert devices.search_largest_T(run, start=1024, limit=4096) == (4096, None)


def test_release_cuda_memory_collects_first(monkeypatch):
    log = []
    monkeypatch.setattr(devices.gc, "collect", lambda: log.append("collect"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: log.append("empty_cache"))
    devices.release_cuda_memory()
    assert log == ["collect", "empty_cache"]


HAS_MEMINFO = Path("/proc/meminfo").exists()


def test_available_memory_is_a_positive_number_or_unknown():
    free = devices.available_memory_bytes("cpu")
    if HAS_MEMINFO:  # Linux: MemAvailable is read, so a number must come back
        assert isinstance(free, int) and free > 0
    else:
        assert free is None or free > 0


def test_available_memory_reads_memavailable(monkeypatch, tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       8000000 kB\nMemAvailable:   2000000 kB\n")
    real_open = open
    monkeypatch.setattr(devices, "open", lambda path, *a, **k: real_open(  # the module's own `open` only
        meminfo if path == "/proc/meminfo" else path, *a, **k), raising=False)
    assert devices.available_memory_bytes("cpu") == 2_000_000 * 1024
    meminfo.write_text("MemTotal:       8000000 kB\n")
    assert devices.available_memory_bytes("cpu") is None


# ---------------------------------------------------------------- bad arguments to the search

@pytest.mark.parametrize("kwargs, error, match", [
    (dict(start=0), ValueError, "start should be at least 1, but got 0"),
    (dict(start=-4), ValueError, "start should be at least 1, but got -4"),
    (dict(start=1.5), TypeError, "start should be a whole number"),
    (dict(refine_to=0), ValueError, "refine_to should be at least 1"),
    (dict(limit=None), TypeError, "limit should be a whole number"),
    (dict(start=4096, limit=1024), ValueError, "start should be at most limit"),
])
def test_search_largest_T_checks_its_numbers_before_looping(kwargs, error, match):
    """start=0 used to double 0 forever; every number is checked before the first run."""
    run, tried = fake_run(10**9)
    with pytest.raises(error, match=match):
        devices.search_largest_T(run, **kwargs)
    assert tried == []


def test_find_largest_T_checks_run_and_sizes():
    run, tried = fake_run(10**9)
    with pytest.raises(TypeError, match="sizes should be a list of sequence lengths"):
        devices.find_largest_T(run, 1024)
    with pytest.raises(ValueError, match="each entry of sizes should be at least 1"):
        devices.find_largest_T(run, [1024, 0])
    with pytest.raises(ValueError, match="sizes is empty"):
        devices.find_largest_T(run, [])
    with pytest.raises(TypeError, match="run should be a function of T"):
        devices.find_largest_T(None, [1024])
    assert tried == []
