"""Time the course's attention against PyTorch's fused SDPA, and print a table.

    python benchmarks/attention.py                                # CPU (or CUDA if present), fp32, T = 256..1024
    python benchmarks/attention.py --device cuda --dtype bf16 fp32 --sizes 1024 4096 16384 --find-max
    make benchmark ARGS="--sizes 1024 --batch-heads 8 --d-k 64 --threads 2"
    make benchmark ARGS="--impl flash sdpa mm --sizes 1024 2048 4096 --blocks 128x512 256x512 256x1024"

The measurement is helpers/measure.py, which notebooks 07 and 11 call too. What only this script
needs lives here: SDPA forced to one backend (--impl sdpa:flash ...), the search for the largest T
at which the course's attention fits on a GPU (--find-max), this machine's torch.mm rate as a reference
rate for every implementation (--impl mm) and a sweep of FlashAttention's tile sizes (--blocks).
"""
from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path

# Run as `python benchmarks/attention.py`, Python puts benchmarks/ first on the path, not the
# repository root: add the root so that `helpers` is found without an installed package too.
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from helpers import cost, measure  # noqa: E402
from helpers.attention_torch import scaled_dot_product_attention  # noqa: E402

BACKENDS = {"flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION", "cudnn": "CUDNN_ATTENTION", "math": "MATH"}


def forced_sdpa(backend: str):
    """A preparer for SDPA restricted to one backend; PyTorch raises 'No available kernel' where it cannot run."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def prepare(Q, K, V, causal=False):
        def call():
            with sdpa_kernel([getattr(SDPBackend, BACKENDS[backend])]):
                return F.scaled_dot_product_attention(Q, K, V, is_causal=causal)
        return call
    return prepare


def matmul_only(Q, K, V, causal=False):
    """A preparer for this machine's torch.mm rate: ONE product of two square float32 matrices, no softmax, no memory
    traffic to speak of: a reference rate, not a hard ceiling. 2 N^3 is close to attention's 4*B*H*T^2*d_k, with N a
    multiple of 64 (sizes such as 1,290 or 1,625 can run a quarter slower); its rate counts its own 2 N^3 FLOPs (the
    call's `flops`)."""
    N = 64 * max(1, round((2 * Q.shape[1] * Q.shape[2] ** 2 * Q.shape[3]) ** (1 / 3) / 64))
    a, b = (torch.randn(N, N, generator=torch.Generator().manual_seed(seed)).to(Q) for seed in (1, 2))

    def call():
        return torch.mm(a, b)
    call.flops = 2 * N**3
    return call


def implementations(blocks=()) -> dict:
    found = dict(measure.WITH_FLASH)
    found["mm"] = ("torch.mm of square matrices with about attention's FLOPs: this machine's matrix-multiply rate, "
                   "a reference", matmul_only)
    for short, name in BACKENDS.items():
        found[f"sdpa:{short}"] = (f"SDPA forced to the {name} backend", forced_sdpa(short))
    for block_q, block_k in blocks:
        found[f"flash:{block_q}x{block_k}"] = (f"flash with tiles of {block_q} x {block_k}",
                                               measure.flash_preparer(block_q, block_k))
    return found


def shares(rows, reference: str = "mm") -> list[str]:
    """'T=2048 float32: of mm's rate, flash 0.81, sdpa 0.88' lines: each implementation's TFLOP/s over mm's."""
    lines = []
    for dtype, T in sorted({(r.dtype, r.T) for r in rows}):
        group = {r.impl: r.tflops for r in rows if r.dtype == dtype and r.T == T and r.tflops}
        top = group.pop(reference, None)
        if top and group:
            lines.append(f"T={T} {dtype}: of {reference}'s rate ({1e3 * top:.0f} GFLOP/s), "
                         + ", ".join(f"{name} {rate / top:.2f}" for name, rate in group.items()))
    return lines


def differences(rows, implementations, args, device) -> list[str]:
    """'T=2048 float32: max |impl - sdpa| flash 2.4e-07' lines for the flash rows that ran, on the same inputs."""
    lines = []
    for dtype, T in sorted({(r.dtype, r.T) for r in rows}):
        impls = [r.impl for r in rows if r.dtype == dtype and r.T == T and r.ms and r.impl.startswith("flash")]
        if impls:
            Q, K, V = measure.make_qkv(args.batch_heads, T, args.d_k, device=device, dtype=dtype)
            reference = F.scaled_dot_product_attention(Q, K, V, is_causal=args.causal).float()
            gaps = [f"{name} {(implementations[name][1](Q, K, V, args.causal)() - reference).abs().max().item():.1e}"
                    for name in impls]
            lines.append(f"T={T} {dtype}: max |impl - sdpa| " + ", ".join(gaps))
    return lines


def block_pair(text: str) -> tuple[int, int]:
    block_q, _, block_k = text.partition("x")
    if not (block_q.isdigit() and block_k.isdigit() and int(block_q) > 0 and int(block_k) > 0):
        raise argparse.ArgumentTypeError(f"expected tile sizes as QUERIESxKEYS, e.g. 256x512, got {text!r}")
    return int(block_q), int(block_k)


def largest_T(dtype, batch_heads: int, d_k: int, device, start: int = 1024, limit: int = 2**20, step: int = 1024):
    """On CUDA: the largest T at which the course's attention runs, doubling T and then bisecting.

    Returns (largest T that ran, smallest T that ran out of memory, or an error that is not out of memory).
    """
    def fits(T):
        try:
            Q, K, V = measure.make_qkv(batch_heads, T, d_k, device=device, dtype=dtype)
            scaled_dot_product_attention(Q, K, V)
            measure.synchronize(device)
            return True
        except RuntimeError as error:
            if not measure.is_out_of_memory(error):
                return f"stopped by an error that is not out of memory: {str(error).splitlines()[0][:80]}"
            return False
        finally:  # free the failed attempt's tensors before the next try
            gc.collect()
            torch.cuda.empty_cache()

    ok, T = None, start
    while T <= limit:
        answer = fits(T)
        if answer is not True:
            if answer is not False:
                return ok, answer
            break
        ok, T = T, 2 * T
    else:
        return ok, None
    bad = T
    while ok is not None and bad - ok > step:
        middle = (ok + bad) // 2 // step * step
        if middle in (ok, bad):
            break
        answer = fits(middle)
        if answer is True:
            ok = middle
        elif answer is False:
            bad = middle
        else:
            return ok, answer
    return ok, bad


def whole_number(at_least: int):
    def parse(text: str) -> int:
        if not text.isdigit() or int(text) < at_least:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {at_least}, got {text!r}")
        return int(text)
    return parse


def dtype_arg(text: str) -> str:
    try:
        return cost.dtype_name(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="The course's attention vs torch.nn.functional.scaled_dot_product_attention: "
                    "time (warmed up, synchronised), achieved TFLOP/s (4*B*H*T^2*d_k) and peak memory.")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"],
                        help="where to run (auto: cuda if available, else cpu)")
    parser.add_argument("--dtype", nargs="+", type=dtype_arg, default=None,
                        help="float32/fp32, bfloat16/bf16, float16/fp16 (default: bf16 and fp32 on CUDA, fp32 on CPU)")
    parser.add_argument("--sizes", nargs="+", type=whole_number(1), default=[256, 512, 1024], help="sequence lengths T")
    parser.add_argument("--batch-heads", type=whole_number(1), default=8, help="batch size x number of heads (B*H)")
    parser.add_argument("--d-k", type=whole_number(1), default=64, help="per-head dimension d_k")
    parser.add_argument("--causal", action="store_true",
                        help="causal mask (FLOPs counted as halved, the pairs a fused kernel skips)")
    parser.add_argument("--impl", nargs="+", default=["naive", "lean", "tiled", "sdpa"],
                        choices=list(implementations()), metavar="IMPL",
                        help="implementations to compare; sdpa:flash etc. force one SDPA backend; mm: torch.mm with "
                             "about the same FLOPs, a reference rate (its rate only: not in the time ratios)")
    parser.add_argument("--blocks", nargs="+", type=block_pair, default=[],
                        help="also time flash with these tiles (queries x keys), e.g. 128x512 256x512: a sweep")
    parser.add_argument("--repeats", type=whole_number(3), default=7,
                        help="timed rounds, at least 3 (the median is reported)")
    parser.add_argument("--warmup", type=whole_number(0), default=2, help="untimed calls first (>= 0)")
    parser.add_argument("--threads", type=whole_number(1), default=None,
                        help="CPU threads for torch (default: torch's current setting; ignored on CUDA)")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory measurement")
    parser.add_argument("--find-max", action="store_true",
                        help="CUDA only: the largest T the course's attention fits (catches out-of-memory errors)")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        device = measure.resolve_device(args.device)
    except RuntimeError as error:
        print(f"{error} Use --device cpu (or auto).", file=sys.stderr)
        return 2
    if args.device == "auto" and device.type == "cpu":
        print(f"No CUDA GPU here ({measure.cuda_unavailable_reason()}): timing on the CPU.")
    dtypes = args.dtype or measure.default_dtypes(device)
    threads = (args.threads or torch.get_num_threads()) if device.type == "cpu" else None
    print(measure.header(device, threads, args.batch_heads, args.d_k, args.causal))
    if "mm" in args.impl:
        print("mm: one square N x N product, N the multiple of 64 nearest attention's FLOPs, rated by its own 2*N^3")
    found = implementations(args.blocks)
    impls = [*args.impl, *(f"flash:{q}x{k}" for q, k in args.blocks)]
    rows = measure.run_benchmark(device=device, dtypes=dtypes, sizes=args.sizes, batch_heads=args.batch_heads,
                                 d_k=args.d_k, causal=args.causal, impls=impls, implementations=found,
                                 warmup=args.warmup, repeats=args.repeats, num_threads=threads,
                                 memory=not args.no_memory)
    print(measure.format_table(rows))
    timed = [r for r in rows if r.impl != "mm"]   # mm does other work: its rate counts, not its time
    print(*measure.ratios(timed), *shares(rows), *differences(rows, found, args, device), sep="\n")
    if args.find_max and device.type != "cuda":
        print("--find-max is CUDA only: on a CPU, running out of memory swaps or stops the process instead of "
              "raising an error.")
    elif args.find_max:
        for dtype in dtypes:
            ok, bad = largest_T(dtype, args.batch_heads, args.d_k, device)
            why = bad if isinstance(bad, str) else f"out of memory at {bad}" if bad else "all sizes tried fitted"
            print(f"largest T the course's attention fits ({dtype}, batch*heads {args.batch_heads}): {ok} ({why})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
