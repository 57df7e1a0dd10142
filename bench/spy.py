"""Summarise a ``py-spy record --format raw`` file: the functions with the most samples.

    py-spy record --format raw -o out.txt -- python -m bench.inproc bench.app:app --work echo --n 20000
    python -m bench.spy out.txt [--top 30] [--match fastapi_mrtr]

Prints, per function, the share of samples in which it was on the stack (inclusive) and on top
(self). A sampling profile barely slows the program, so the shares are close to the real ones.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter

_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>.*?)(?::(?P<line>\d+))?\)$")


def short(frame: str) -> str:
    """``func (path/to/site-packages/pkg/mod.py:12)`` -> ``pkg/mod.py:func``."""
    match = _FRAME.match(frame)
    if match is None:
        return frame
    path = match["file"].split("site-packages/")[-1].split("/work/main/")[-1]
    return f"{path}:{match['func']}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("raw")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--match", default="", help="only list functions whose location contains this")
    parser.add_argument("--within", default="measure", help="only count stacks through this function (skips start-up)")
    args = parser.parse_args()
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    with open(args.raw) as f:
        for line in f:
            stack, _, count_text = line.rstrip("\n").rpartition(" ")
            if not stack:
                continue
            count = int(count_text)
            frames = [short(frame) for frame in stack.split(";")]
            if args.within and not any(frame.endswith(":" + args.within) for frame in frames):
                continue
            total += count
            own[frames[-1]] += count
            for name in set(frames):
                inclusive[name] += count
    print(f"{total} samples")
    print(f"{'incl%':>6} {'self%':>6}  function")
    ranked = sorted(inclusive, key=lambda n: (-own[n], -inclusive[n]))
    shown = 0
    for name in ranked:
        if args.match and args.match not in name:
            continue
        print(f"{100 * inclusive[name] / total:6.1f} {100 * own[name] / total:6.1f}  {name}")
        shown += 1
        if shown >= args.top:
            break


if __name__ == "__main__":
    main()
