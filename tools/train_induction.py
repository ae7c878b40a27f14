"""Train notebook 10's three models from their fixed seed and store them in helpers/data/induction.pt.

    .venv/bin/python tools/train_induction.py            # train (one CPU thread) and store
    .venv/bin/python tools/train_induction.py --check    # train, compare with the committed file, store nothing

The file holds the weights, the training logs (loss at the copy and the other positions after every step, both
scores of every head every 25 steps), the probe the scores were measured on, the training times and the torch
version. The notebook loads it; tests/test_induction.py checks that it still agrees with the code.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from helpers import induction  # noqa: E402


def report(record: dict) -> None:
    print(f"torch {record['torch']}")
    for name, log in record["logs"].items():
        previous, ind = log["final_scores"]
        print(f"{name:<24} {len(log['copy']):>5} steps {log['seconds']:6.1f} s   last 100 steps: copy "
              f"{log['copy'][-100:].mean():.3f}, other {log['other'][-100:].mean():.3f}")
        for layer in range(previous.size(0)):
            print("    " + "   ".join(f"head {layer}.{h}: previous-token {previous[layer, h]:.2f}, induction "
                                      f"{ind[layer, h]:.2f}" for h in range(previous.size(1))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the committed file, store nothing")
    args = parser.parse_args()
    record = induction.train_all()
    report(record)
    if args.check:
        stored = induction.load_record()
        for name in induction.RECIPES:
            gap = (record["logs"][name]["final_scores"] - stored["logs"][name]["final_scores"]).abs().max()
            print(f"{name}: largest score difference from the committed file {gap:.3f}")
    else:
        induction.WEIGHTS.parent.mkdir(exist_ok=True)
        torch.save(record, induction.WEIGHTS)
        print(f"stored {induction.WEIGHTS.relative_to(ROOT)} ({induction.WEIGHTS.stat().st_size / 1024:.0f} KB)")


if __name__ == "__main__":
    main()
