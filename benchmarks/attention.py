"""Time naive attention against PyTorch's fused SDPA, and print a table.

    python benchmarks/attention.py                                # CPU (or CUDA if present), fp32, T = 256..1024
    python benchmarks/attention.py --device cuda --dtype bf16 fp32 --sizes 1024 4096 16384 --find-max
    make benchmark ARGS="--sizes 1024 --batch-heads 8 --d-k 64 --threads 2"

The measurement itself lives in helpers/benchmarking.py (timing and peak memory
of one call in helpers/measure.py, the device and dtype in helpers/devices.py),
which notebook 07's timing cells call too: this file only reads the arguments and prints.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

# Run as `python benchmarks/attention.py`, Python puts benchmarks/ first on the path, not the
# repository root: add the root so that `helpers` is found without an installed package too.
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from helpers import benchmarking as bench  # noqa: E402
from helpers import cost, devices  # noqa: E402


def whole_number(text: str, at_least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= {at_least}, got {text!r}") from None
    if value < at_least:
        raise argparse.ArgumentTypeError(f"expected a whole number >= {at_least}, got {text}")
    return value


def positive(text: str) -> int:
    return whole_number(text, 1)


def non_negative(text: str) -> int:
    return whole_number(text, 0)


def repeats_arg(text: str) -> int:
    """At least 3 rounds: with 2 the median is a mean, and the paired ratio and the table's medians disagree."""
    return whole_number(text, 3)


def dtype_arg(text: str) -> str:
    try:
        devices.resolve_dtype(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return cost.dtype_name(text)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Naive attention vs torch.nn.functional.scaled_dot_product_attention: "
                    "time (warmed up, synchronised), achieved TFLOP/s (4*B*H*T^2*d) and peak memory.")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"],
                        help="where to run (auto: cuda if available, else cpu)")
    parser.add_argument("--dtype", nargs="+", type=dtype_arg, default=None,
                        help="float32/fp32, bfloat16/bf16, float16/fp16 (default: bf16 and fp32 on CUDA, fp32 on CPU)")
    parser.add_argument("--sizes", nargs="+", type=positive, default=[256, 512, 1024], help="sequence lengths T")
    parser.add_argument("--batch-heads", type=positive, default=8, help="batch size x number of heads (B*H)")
    parser.add_argument("--d-k", type=positive, default=64, help="per-head dimension d_k")
    parser.add_argument("--causal", action="store_true", help="causal mask (FLOPs are halved)")
    parser.add_argument("--impl", nargs="+", default=["naive", "lean", "tiled", "sdpa"],
                        choices=list(bench.IMPLEMENTATIONS),
                        help="implementations to compare; sdpa:flash etc. force one SDPA backend")
    parser.add_argument("--repeats", type=repeats_arg, default=7,
                        help="timed rounds, at least 3 (the median is reported)")
    parser.add_argument("--warmup", type=non_negative, default=2, help="untimed calls first (>= 0)")
    parser.add_argument("--threads", type=positive, default=None,
                        help="CPU threads for torch (default: torch's current setting; ignored on CUDA)")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory measurement")
    parser.add_argument("--find-max", action="store_true",
                        help="CUDA only: find the largest T the naive version fits (catches OutOfMemoryError)")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        device = devices.resolve_device(args.device)
    except RuntimeError as error:
        print(error, file=sys.stderr)
        return 2
    if args.device == "auto" and device.type == "cpu":
        print(f"No CUDA GPU here ({devices.cuda_unavailable_reason()}): timing on the CPU.")
    dtypes = args.dtype or devices.default_dtypes(device)
    if args.threads is not None and device.type != "cpu":
        print(f"--threads {args.threads} is ignored on {device.type}: it sets CPU threads, and the GPU does the work.")
    threads = args.threads if device.type == "cpu" else None
    if device.type == "cpu" and threads is None:
        threads = torch.get_num_threads()
    print(bench.header(device, threads, args.batch_heads, args.d_k, args.causal))
    rows = bench.run_benchmark(device=device, dtypes=dtypes, sizes=args.sizes, batch_heads=args.batch_heads,
                               d_k=args.d_k, causal=args.causal, impls=args.impl, warmup=args.warmup,
                               repeats=args.repeats, num_threads=threads, memory=not args.no_memory)
    print(bench.format_table(rows))
    for line in bench.ratios(rows):
        print(line)
    if args.find_max:
        if device.type != "cuda":
            budget = devices.available_memory_bytes("cpu")
            if budget:
                T = cost.largest_T_for_memory(budget, dtypes[0], heads=args.batch_heads, matrices=2)
                print(f"--find-max is CUDA only (on a CPU, running out of memory swaps or kills the process "
                      f"instead of raising). Predicted from {cost.format_bytes(budget)} available: the naive "
                      f"version's two (T, T) buffers fit up to T = {T:,}.")
            else:
                print("--find-max is CUDA only.")
        else:
            for dtype in dtypes:
                ok, bad = bench.largest_naive_T_cuda(dtype, batch_heads=args.batch_heads, d_k=args.d_k,
                                                     device=device)
                print(f"largest T the naive version fits ({dtype}, batch*heads {args.batch_heads}): {ok} "
                      f"(out of memory at {bad})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
