"""The differential fuzzer's long profile (tests/fuzz/test_fuzz.py is the CI one).

    .venv/bin/python benchmarks/fuzz_long.py --programs 2000 --seed 1
        [--target numpy|cuda|dask|dask-cuda|all] [--jobs 2] [--cuda-fraction 0.1]
        [--shrink-budget 20] [--time-limit 600]

Programs ``seed, seed + 1, ...`` are generated (tests/fuzz/generator.py) and checked
(tests/fuzz/oracle.py): ``--target numpy`` on the NumPy target and, for the pure ones, the lazy
API; ``cuda`` on the CUDA target (the CPU emulator, or a GPU with PYPTO_CUDA_TESTS=device);
``dask`` on the Dask target (random chunks, the synchronous scheduler); ``dask-cuda`` the same
with CuPy chunks (the emulator's device arrays: the CUDA target's code per task);
``all`` both, the CUDA target for about ``--cuda-fraction`` of the programs (its emulator compiles
C++ for every program). The report gives, per path, the programs run, passes, refusals (PPT1xx
UnsupportedError, not failures), failures by category, seconds per program and programs per
minute; then every distinct failure (same path, category, exception types and message shape)
with its count, seeds and the smallest shrunk program. ``--time-limit`` stops starting new
programs after that many seconds.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "tests"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))
# as the tests run: small chunks (many blocks), generator failures raised, plans checked
os.environ.setdefault("PYPTO_CHUNK_BUDGET", "256")
os.environ.setdefault("PYPTO_STRICT_EMIT", "1")
os.environ.setdefault("PYPTO_CHECK_PLAN", "1")


def _wants_cuda(seed: int, fraction: float) -> bool:
    return (seed * 2654435761 % 2**32) / 2**32 < fraction


def _work(job):
    """One worker's share: verdict records and shrunk findings."""
    seeds, target, fraction, shrink_budget, per_failure, deadline = job
    from fuzz import oracle
    from fuzz.generator import generate

    records = []
    findings = []
    shrunk_keys = collections.Counter()
    for seed in seeds:
        if time.time() > deadline:
            break
        try:
            program = generate(seed)
        except Exception as e:  # the generator's own bug: say so, go on
            records.append((seed, "generator", "failure", "generator", repr(e), 0.0))
            continue
        paths = []
        if target in ("numpy", "all"):
            paths += oracle.paths_for(program, ("numpy", "lazy"))
        if target == "cuda" or (target == "all" and _wants_cuda(seed, fraction)):
            paths.append("cuda")
        if target in ("dask", "dask-cuda"):
            paths.append(target)
        for path in paths:
            try:
                v = oracle.check(program, path)
            except Exception as e:
                records.append((seed, path, "failure", "oracle", repr(e), 0.0))
                continue
            records.append((seed, path, v.status, v.category, v.detail, v.seconds))
            if v.status != "failure":
                continue
            group = _group(v)
            if shrunk_keys[group] >= 2:  # shrink the first two of each kind only
                findings.append((seed, str(v), None, program.describe(), group))
                continue
            shrunk_keys[group] += 1
            budget = per_failure * (3 if path == "cuda" else 1)
            small, sv, _ = oracle.shrink(program, path, v, min(budget, shrink_budget))
            findings.append((seed, str(v), str(sv), small.describe(), group))
    return records, findings, oracle.CUDA_LAUNCHES[0]


def _group(v) -> tuple:
    """What makes two failures the same kind: the key and the message with its values out."""
    first = v.detail.splitlines()[0] if v.detail else ""
    first = re.sub(r"\[.*", "", first) if v.category not in ("crash", "exception class") else first
    if v.category in ("crash", "exception class"):  # the op's operands out of the message
        first = re.sub(r"` of .*?: `", "` of ...: `", first)
        first = re.sub(r"\b(bool|int|float|u?int\d+|float\d+)\b", "T", first)
    first = re.sub(r"`[^`]*`", "`_`", first)
    first = re.sub(r"\b[a-z]\d+\b", "_", first)
    first = re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", "N", first)
    first = re.sub(r"\(.*?\)", "()", first)[:160]
    return (*v.key, first)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--programs", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    targets = ["numpy", "cuda", "dask", "dask-cuda", "all"]
    ap.add_argument("--target", choices=targets, default="all")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--cuda-fraction", type=float, default=0.1)
    ap.add_argument("--shrink-budget", type=float, default=20.0, help="seconds per failure")
    ap.add_argument("--time-limit", type=float, default=None, help="seconds, then stop")
    ap.add_argument("--max-shown", type=int, default=40, help="distinct failures printed")
    args = ap.parse_args(argv)

    start = time.time()
    deadline = start + (args.time_limit if args.time_limit else 10**9)
    seeds = list(range(args.seed, args.seed + args.programs))
    jobs = max(1, args.jobs)
    chunk = max(1, min(25, len(seeds) // (jobs * 4) or 1))
    work = [
        (seeds[i : i + chunk], args.target, args.cuda_fraction, args.shrink_budget, 5.0, deadline)
        for i in range(0, len(seeds), chunk)
    ]
    records, findings, launches = [], [], 0
    if jobs == 1:
        results = map(_work, work)
    else:
        pool = ProcessPoolExecutor(max_workers=jobs)
        results = pool.map(_work, work)
    for r, f, n in results:
        records += r
        findings += f
        launches += n
    if jobs != 1:
        pool.shutdown()
    wall = time.time() - start
    print(_report(args, records, findings, launches, wall, jobs))
    return 1 if any(r[2] == "failure" for r in records) else 0


def _report(args, records, findings, launches, wall, jobs) -> str:
    out = []
    programs = len({r[0] for r in records})
    out.append(
        f"PyPTO differential fuzzer: {programs} programs (seeds {args.seed}..), target "
        f"{args.target}, {jobs} job(s), wall time {wall:.1f} s"
    )
    by_path = collections.defaultdict(list)
    for r in records:
        by_path[r[1]].append(r)
    out.append("")
    out.append(
        f"{'path':<10}{'run':>7}{'ok':>7}{'refused':>9}{'failed':>8}{'s/prog':>9}{'prog/min':>10}"
        "   failures by category"
    )
    for path in ("numpy", "lazy", "cuda", "dask", "dask-cuda", "generator"):
        rs = by_path.get(path)
        if not rs:
            continue
        st = collections.Counter(r[2] for r in rs)
        cats = collections.Counter(r[3] for r in rs if r[2] == "failure")
        secs = sum(r[5] for r in rs)
        per = secs / len(rs)
        rate = 60.0 / per if per else float("inf")
        cat_text = ", ".join(f"{c}: {n}" for c, n in cats.most_common())
        out.append(
            f"{path:<10}{len(rs):>7}{st['ok']:>7}{st['refusal']:>9}{st['failure']:>8}"
            f"{per:>9.3f}{rate:>10.0f}   {cat_text}"
        )
    out.append(
        "(s/prog: seconds per program on one core, NumPy reference and both PyPTO runs "
        f"included; CUDA kernels launched: {launches})"
    )
    refusals = collections.Counter(
        (r[1], re.sub(r"`[^`]*`", "`_`", r[4])[:120]) for r in records if r[2] == "refusal"
    )
    if refusals:
        out.append("\nrefusals (PPT1xx), most common first:")
        for (path, text), n in refusals.most_common(12):
            out.append(f"  {n:>5}  [{path}] {text}")
    crashed = [r for r in records if r[3] in ("oracle", "generator") and r[2] == "failure"]
    if crashed:  # the oracle's or the generator's own exceptions (no program to shrink)
        out.append("\nthe oracle or the generator raised:")
        for seed, path, _st, cat, text, _s in crashed[:12]:
            out.append(f"  seed {seed} [{path}] {cat}: {text[:300]}")
    groups = collections.defaultdict(list)
    for f in findings:
        groups[f[4]].append(f)
    out.append(f"\ndistinct failures: {len(groups)}")
    ordered = sorted(groups.items(), key=lambda kv: -len(kv[1]))
    for k, (group, fs) in enumerate(ordered[: args.max_shown]):
        shrunk = [f for f in fs if f[2] is not None]
        best = min(shrunk or fs, key=lambda f: len(f[3]))
        seeds = ", ".join(str(f[0]) for f in fs[:12]) + (" ..." if len(fs) > 12 else "")
        out.append("")
        out.append(f"--- failure {k + 1}: {len(fs)}x [{group[0]}] {group[1]} (seeds {seeds})")
        out.append(f"    generated: {best[1]}")
        if best[2] is not None:
            out.append(f"    shrunk:    {best[2]}")
        out.append("    " + best[3].replace("\n", "\n    "))
    if len(ordered) > args.max_shown:
        out.append(f"\n({len(ordered) - args.max_shown} more distinct failures not shown)")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
