"""Which pages of a server became resident between memory checkpoints, and what they hold.

    .bench-venv/bin/python -m bench.rss_pages [bench.app:app@/mcp] [--script bench/echo_pairs.lua]

Starts the server as the memory runs do (bench/memory.py), drives it to each checkpoint
(``--flows``, 1,000, 10,000 and 100,000 by default), and reads ``/proc/PID/pagemap`` after each
one. For every page that became resident it prints the mapping. When the mapping is a 1 MiB
anonymous one (a pymalloc arena on 64-bit CPython 3.10 and later), it also prints the header of
the 16 KiB pool holding the page: its size class, its blocks in use and ``nextoffset``, which is
how deep the pool has ever been carved. Such a page shows a pool carved deeper than before: the
allocator reaching a new high-water mark, not an object kept alive.

Run it from the repository root, on Linux, as a user allowed to read the server's memory; the
server runs on the Python that runs this.
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

from . import memory

PAGE = 4096
POOL = 16 * 1024
ARENA = 1024 * 1024
# struct pool_header of CPython 3.10+ (64-bit): the count (padded to a pointer), three pointers,
# then arenaindex, szidx, nextoffset and maxnextoffset.
POOL_HEADER = struct.Struct("<I4xQQQIIII")


def resident_pages(pid: int) -> dict[int, tuple[str, int, int]]:
    """Every resident page of a writable mapping: address -> (mapping name, start, end)."""
    pages: dict[int, tuple[str, int, int]] = {}
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for line in maps:
            fields = line.split()
            if "w" not in fields[1]:
                continue
            name = fields[5] if len(fields) > 5 else "[anonymous]"
            if name in ("[vvar]", "[vsyscall]"):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            pagemap.seek(start // PAGE * 8)
            entries = pagemap.read((end - start) // PAGE * 8)
            for index, (entry,) in enumerate(struct.iter_unpack("<Q", entries)):
                if entry >> 63:  # bit 63: present in RAM
                    pages[start + index * PAGE] = (name, start, end)
    return pages


def pool_header(pid: int, address: int) -> str:
    with open(f"/proc/{pid}/mem", "rb") as mem:
        mem.seek(address & ~(POOL - 1))
        header = mem.read(POOL_HEADER.size)
    count, _free, _next, _prev, _arena, size_index, next_offset, _max = POOL_HEADER.unpack(header)
    return f"pool of {(size_index + 1) * 16}-byte blocks, {count} in use, carved to offset {next_offset}"


def describe(pid: int, address: int, mapping: tuple[str, int, int]) -> str:
    name, start, end = mapping
    where = f"{address:x} in {name} {start:x}-{end:x}, page {(address - start) // PAGE}"
    if name == "[anonymous]" and end - start == ARENA:
        return f"{where}: {pool_header(pid, address)}"
    return where


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec", nargs="?", default="bench.app:app@/mcp")
    parser.add_argument("--script", default=str(memory.FLOWS_SCRIPT), help="wrk script: flows.lua or echo_pairs.lua")
    parser.add_argument("--flows", default="1000,10000,100000", help="cumulative checkpoints")
    parser.add_argument("--conns", type=int, default=8)
    args = parser.parse_args()
    with memory.serving(sys.executable, args.spec) as (pid, url):
        before: dict[int, tuple[str, int, int]] | None = None
        done = 0
        for checkpoint in (int(n) for n in args.flows.split(",")):
            memory.drive(pid, url, Path(args.script), checkpoint - done, args.conns)
            done = checkpoint
            now = resident_pages(pid)
            print(f"after {done:,} flows: RSS {memory.rss_kib(pid):,} KiB", flush=True)
            if before is not None:
                for address in sorted(now.keys() - before.keys()):
                    print(f"  + {describe(pid, address, now[address])}")
                for address in sorted(before.keys() - now.keys()):
                    print(f"  - {address:x} in {before[address][0]}")
            before = now


if __name__ == "__main__":
    main()
