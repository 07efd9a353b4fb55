"""The project's hand-written format code against the libraries that do the same job.

Four pairs, each on inputs users have, one thread, every run in a fresh process:

- BGZF writing (genointerp.io.bgzf) against htslib's (pysam.libcbgzf.BGZFile) and Biopython's
  (Bio.bgzf.BgzfWriter): FASTQ text from `genointerp simulate-reads` and a chr20 FASTA;
- VCF genotypes to an int8 dosage matrix (genointerp.io.vcf.VcfGenotypes) against cyvcf2
  (htslib): the 1000 Genomes VCF as shipped (379 samples) and its samples tiled to ~10,000;
- FASTQ records (genointerp/_fastq.c through genointerp.io.sequences.iter_read_batches, lists of
  1,024 as classify-reads takes them) against dnaio (and pysam's FastxFile, what the project used
  before): 150 bp HPV reads, plain and gzip;
- Basenji TFRecord records (genointerp.io.tfrecord, its CRC32C from the crc32c package) against
  the `tfrecord` package, on real chr20 sequence and ENCODE-DREAM peak signal.

Each case is run --repeats times, the implementations interleaved (the machine is shared: the
best time is the one least disturbed; the median is shown beside it). Seconds are measured inside
the child process around the work alone (no interpreter start, no imports); memory is the child's
peak resident set above its resident set when the work starts. Every implementation's output is
hashed (the compressed bytes; the dosage matrix; the records; the arrays) and compared with the
project's: "same" or "DIFFERENT".

    pip install -e '.[bench-formats]'   # cyvcf2, dnaio, tfrecord
    python benchmarks/formats.py --shared ../shared/data [--repeats 5] [--reads 200000]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from functools import partial
from itertools import chain, islice
from pathlib import Path
from typing import Callable, Iterable, NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from common import GENOINTERP, out_dir, table  # noqa: E402

ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
WRITE_PIECE = 1 << 16  # bytes per write() call into a BGZF writer (callers write lines; buffered)


# ------------------------------------------------------------------------------------------------
# the work, run in a child process: each function returns a Work for its implementation and input


class Work(NamedTuple):
    """run() does the work, yielding what it produces (records, sites; nothing for a writer);
    digest() hashes the output, in a second pass."""

    run: Callable[[], Iterable]
    digest: Callable[[], str]


def _pieces(data: bytes):
    view = memoryview(data)
    for i in range(0, len(data), WRITE_PIECE):
        yield view[i : i + WRITE_PIECE]


def _file_digest(path: str) -> Callable[[], str]:
    return lambda: hashlib.sha256(Path(path).read_bytes()).hexdigest()


def bgzf_genointerp(src: str, dst: str) -> Work:
    import io

    from genointerp.io.bgzf import BgzfWriter

    data = Path(src).read_bytes()

    def run():
        with open(dst, "wb") as raw, io.BufferedWriter(BgzfWriter(raw), buffer_size=1 << 20) as out:  # as open_output
            for piece in _pieces(data):
                out.write(piece)
        return ()
    return Work(run, _file_digest(dst))


def bgzf_pysam(src: str, dst: str) -> Work:
    from pysam.libcbgzf import BGZFile

    data = Path(src).read_bytes()

    def run():
        with BGZFile(dst, "wb") as out:
            for piece in _pieces(data):
                out.write(bytes(piece))
        return ()
    return Work(run, _file_digest(dst))


def bgzf_biopython(src: str, dst: str) -> Work:
    from Bio.bgzf import BgzfWriter

    data = Path(src).read_bytes()

    def run():
        with BgzfWriter(dst, "wb", compresslevel=6) as out:
            for piece in _pieces(data):
                out.write(bytes(piece))
        return ()
    return Work(run, _file_digest(dst))


def _sites_digest(sites) -> str:
    h = hashlib.sha256()
    for chrom, pos, ref, alt, dosage in sites:
        h.update(f"{chrom}\t{pos}\t{ref}\t{alt}\n".encode())
        h.update(np.asarray(dosage, dtype=np.int8).tobytes())
    return h.hexdigest()


def vcf_genointerp(path: str) -> Work:
    from genointerp.io.vcf import VcfGenotypes

    def run():
        with VcfGenotypes(path) as vcf:
            for s in vcf:
                yield s.chrom, s.pos, s.ref, s.alt, s.dosage
    return Work(run, lambda: _sites_digest(run()))


def vcf_cyvcf2(path: str) -> Work:
    """The same dosages from cyvcf2's allele arrays: non-REF alleles counted, haploid and polyploid
    calls scaled to two copies, a missing allele -1 (genointerp.io.vcf's conventions)."""
    from cyvcf2 import VCF

    def run():
        vcf = VCF(path, threads=None)
        for v in vcf:
            a = v.genotype.array()[:, :-1]  # int16 (n, max ploidy): allele numbers, -1 missing, -2 no allele
            ploidy = (a != -2).sum(1)
            alt = (a > 0).sum(1)
            dosage = np.where(ploidy == 2, alt, np.rint(2 * alt / np.maximum(ploidy, 1))).astype(np.int8)
            dosage[(a == -1).any(1)] = -1
            yield v.CHROM, v.POS, v.REF, ",".join(v.ALT), dosage
        vcf.close()
    return Work(run, lambda: _sites_digest(run()))


def vcf_cyvcf2_gt_types(path: str) -> Work:
    """cyvcf2's fastest route, gt_types with gts012: right only where every call is diploid and
    biallelic (a 1/2 call is 'HET', 1; a haploid 1 is 'HOM_ALT', 2)."""
    from cyvcf2 import VCF

    def run():
        vcf = VCF(path, gts012=True, threads=None)
        for v in vcf:
            t = v.gt_types.astype(np.int8)  # 0 HOM_REF, 1 HET, 2 HOM_ALT, 3 UNKNOWN
            t[t == 3] = -1
            yield v.CHROM, v.POS, v.REF, ",".join(v.ALT), t
        vcf.close()
    return Work(run, lambda: _sites_digest(run()))


def _records_digest(records) -> str:
    h = hashlib.sha256()
    n = 0
    for name, seq, qual in records:
        h.update(f"{name}\t{seq}\t{qual}\n".encode())
        n += 1
    return f"{h.hexdigest()[:16]} ({n} records)"


def fastq_genointerp(path: str) -> Work:
    """iter_read_batches, as classify-reads reads: lists of (name, sequence, quality) tuples."""
    from genointerp.io.sequences import RECORDS_AHEAD, iter_read_batches

    run = partial(iter_read_batches, path, RECORDS_AHEAD)
    return Work(run, lambda: _records_digest(chain.from_iterable(run())))


def fastq_dnaio(path: str) -> Work:
    """The same lists from dnaio's records (the name up to its first space: `id`)."""
    import dnaio

    from genointerp.io.sequences import RECORDS_AHEAD

    def run():
        with dnaio.open(path, open_threads=0) as reader:  # in-process inflate (ISA-L), no threads
            records = ((r.id, r.sequence, r.qualities) for r in reader)
            while batch := list(islice(records, RECORDS_AHEAD)):
                yield batch
    return Work(run, lambda: _records_digest(chain.from_iterable(run())))


def fastq_pysam(path: str) -> Work:
    import pysam

    from genointerp.io.sequences import RECORDS_AHEAD

    def run():
        with pysam.FastxFile(path) as reader:
            records = ((r.name, r.sequence, r.quality) for r in reader)
            while batch := list(islice(records, RECORDS_AHEAD)):
                yield batch
    return Work(run, lambda: _records_digest(chain.from_iterable(run())))


def _arrays_digest(pairs) -> str:
    h = hashlib.sha256()
    n = 0
    for seq, target in pairs:
        h.update(np.ascontiguousarray(seq, dtype=np.float32).tobytes())
        h.update(np.ascontiguousarray(target, dtype=np.float32).tobytes())
        n += 1
    return f"{h.hexdigest()[:16]} ({n} records)"


def tfr_genointerp(folder: str, verify: str = "1") -> Work:
    from genointerp.io.tfrecord import BasenjiDataset

    run = partial(BasenjiDataset, folder, "train", verify_crc=verify == "1")
    return Work(run, lambda: _arrays_digest(run()))


def tfr_tfrecord(folder: str) -> Work:
    """The `tfrecord` package on the uncompressed copy (it reads gzip or plain, not ZLIB; it checks
    no CRC), its bytes features made into the same float32 arrays as genointerp's."""
    from tfrecord.reader import tfrecord_loader

    from genointerp.io.tfrecord import read_statistics

    stats = read_statistics(folder)
    L, T, N = stats["seq_length"], stats["target_length"], stats["num_targets"]
    files = sorted(Path(folder, "tfrecords").glob("train-*.tfr"))

    def run():
        for f in files:
            for ex in tfrecord_loader(str(f), None, {"sequence": "byte", "target": "byte"}):
                seq = np.frombuffer(ex["sequence"], np.uint8).reshape(L, 4).astype(np.float32)
                yield seq, np.frombuffer(ex["target"], "<f2").reshape(T, N).astype(np.float32)
    return Work(run, lambda: _arrays_digest(run()))


def _vm(key: str) -> float:
    """A /proc/self/status size in MB (VmRSS: now; VmHWM: the peak since the last reset)."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(key + ":")) / 1024


def child(name: str, args: list[str]) -> None:
    """Time one pass of the work, then make a second, untimed pass for the digest (so that hashing
    costs the same nothing to every implementation)."""
    work = globals()[name](*args)
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # resets VmHWM: the peak is the work's, not the imports'
    start = _vm("VmRSS")
    t0 = time.perf_counter()
    for _ in work.run():
        pass
    seconds = time.perf_counter() - t0
    peak = _vm("VmHWM")
    print(json.dumps({"seconds": seconds, "mb": max(0.0, peak - start), "digest": work.digest()}))


# ------------------------------------------------------------------------------------------------
# inputs


def _run(cmd: list[str]) -> None:
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        sys.exit(f"failed ({res.returncode}): {' '.join(map(str, cmd))}\n{res.stderr}")


def make_reads(shared: Path, out: Path, n: int) -> tuple[Path, Path]:
    """150 bp reads from the HPV genomes by the project's own simulator, plain and gzip (BGZF)."""
    plain, gz = out / f"hpv_{n}.fq", out / f"hpv_{n}.fq.gz"
    for path in (plain, gz):
        if not path.exists():
            _run(GENOINTERP + ["-q", "simulate-reads", "-s", f"hpv={shared / 'viral/hpv_genomes.fa'}",
                               "--circular", "hpv", "-n", str(n), "--seed", "1", "-o", str(path)])
    return plain, gz


def make_fasta(shared: Path, out: Path, mb: int) -> Path:
    """The first `mb` Mb of GRCh37 chr20 after its leading N run, as 60-column FASTA text."""
    import pysam

    path = out / f"chr20_{mb}Mb.fa"
    if not path.exists():
        seq = pysam.FastaFile(str(shared / "human/GRCh37.chr20.fa.gz")).fetch("20", 100_000, 100_000 + mb * 1_000_000)
        path.write_text(">20\n" + "\n".join(seq[i : i + 60] for i in range(0, len(seq), 60)) + "\n")
    return path


def make_tiled_vcf(shared: Path, out: Path, copies: int) -> Path:
    """The 1000G VCF with its 379 samples repeated `copies` times (names suffixed _1, _2 ...),
    written BGZF: a cohort of the size gene-pca and capsule-train meet (~10,000 at 26 copies)."""
    import gzip
    import io

    from genointerp.io.bgzf import BgzfWriter

    path = out / f"1000G_EUR_x{copies}.vcf.gz"
    if path.exists():
        return path
    with gzip.open(shared / "genotypes/1000G_EUR.chr21-22.vcf.gz", "rt") as src, open(path, "wb") as raw, \
            io.BufferedWriter(BgzfWriter(raw), buffer_size=1 << 20) as dst:
        for line in src:
            if line.startswith("##"):
                dst.write(line.encode())
                continue
            fields = line.rstrip("\n").split("\t")
            if line.startswith("#"):
                samples = [f"{s}_{k}" for k in range(1, copies + 1) for s in fields[9:]]
            else:
                samples = fields[9:] * copies
            dst.write(("\t".join(fields[:9] + samples) + "\n").encode())
    return path


def make_basenji(shared: Path, out: Path, windows: int) -> tuple[Path, Path]:
    """A Basenji/Enformer-shaped data set from real data: 131,072 bp windows of chr20 (one-hot
    uint8) and, per 128 bp bin, the strongest ENCODE-DREAM peak signal of each of the 186 peak sets
    (float16 (896, 186)), written by the `tfrecord` package: one folder ZLIB-compressed (Basenji's
    files), one uncompressed (what `tfrecord` reads)."""
    import gzip
    import json
    import zlib

    import pysam
    from tfrecord.writer import TFRecordWriter

    L, B, T = 131_072, 128, 896
    zfolder, pfolder = out / f"basenji_{windows}_zlib", out / f"basenji_{windows}_plain"
    if (zfolder / "statistics.json").exists() and (pfolder / "statistics.json").exists():
        return zfolder, pfolder
    sets: dict[str, int] = {}
    peaks = []
    with gzip.open(shared / "tracks/dream2016_tfchip.hg19.chr20.narrowPeak.gz", "rt") as fh:
        for line in fh:
            f = line.split("\t")
            peaks.append((sets.setdefault(f[3], len(sets)), int(f[1]) + int(f[9]), float(f[6])))
    n = len(sets)
    start0 = 30_000_000
    signal = np.zeros((windows * L // B, n), dtype=np.float32)
    for track, summit, value in peaks:
        b = (summit - start0) // B
        if 0 <= b < len(signal):
            signal[b, track] = max(signal[b, track], value)
    fasta = pysam.FastaFile(str(shared / "human/GRCh37.chr20.fa.gz"))
    code = np.full(256, 4, dtype=np.uint8)
    for i, c in enumerate(b"ACGT"):
        code[c] = code[c + 32] = i
    onehot_of = np.eye(5, 4, dtype=np.uint8)
    for folder in (zfolder, pfolder):
        (folder / "tfrecords").mkdir(parents=True, exist_ok=True)
    plain = pfolder / "tfrecords/train-0.tfr"
    writer = TFRecordWriter(str(plain))
    crop = (L - T * B) // 2
    for w in range(windows):
        seq = fasta.fetch("20", start0 + w * L, start0 + (w + 1) * L).encode()
        onehot = onehot_of[code[np.frombuffer(seq, np.uint8)]]
        bins = signal[w * L // B + crop // B : w * L // B + crop // B + T]
        writer.write({"sequence": (onehot.tobytes(), "byte"), "target": (bins.astype(np.float16).tobytes(), "byte")})
    writer.close()
    (zfolder / "tfrecords/train-0.tfr").write_bytes(zlib.compress(plain.read_bytes(), 6))
    stats = dict(seq_length=L, seq_depth=4, target_length=T, num_targets=n, pool_width=B, crop_bp=crop,
                 train_seqs=windows, valid_seqs=0, test_seqs=0)
    for folder in (zfolder, pfolder):
        (folder / "statistics.json").write_text(json.dumps(stats))
    return zfolder, pfolder


# ------------------------------------------------------------------------------------------------
# side by side


def measure(cases: list[tuple[str, str, list[tuple[str, str, list[str]]]]], repeats: int) -> list[dict]:
    """cases: (case, input label, [(implementation label, child function, args)]), the project's
    first. Runs each implementation `repeats` times, interleaved, and returns the table rows."""
    env = {**os.environ, **ONE_THREAD}
    rows = []
    for case, what, impls in cases:
        results: dict[str, list[dict]] = {label: [] for label, _, _ in impls}
        for _ in range(repeats):
            for label, fn, args in impls:
                res = subprocess.run([sys.executable, __file__, "--child", fn, *args], capture_output=True, text=True,
                                     env=env)
                if res.returncode:
                    sys.exit(f"{case} {label} failed:\n{res.stderr}")
                results[label].append(json.loads(res.stdout.splitlines()[-1]))
        base = min(r["seconds"] for r in results[impls[0][0]])
        base_digest = results[impls[0][0]][0]["digest"]
        for label, _, _ in impls:
            runs = results[label]
            best = min(r["seconds"] for r in runs)
            digests = {r["digest"] for r in runs}
            rows.append({"case": case, "input": what, "implementation": label,
                         "best s": f"{best:.3f}", "median s": f"{statistics.median(r['seconds'] for r in runs):.3f}",
                         "vs genointerp": f"{best / base:.2f}x",
                         "peak MB": f"{statistics.median(r['mb'] for r in runs):.0f}",
                         "output": "-" if label == impls[0][0] else ("same" if digests == {base_digest} else "DIFFERENT")})
        print(table(rows[-len(impls):], list(rows[-1])), flush=True)
    return rows


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3:])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", default="../shared/data", type=Path)
    ap.add_argument("--out", default="bench-output/formats")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--reads", type=int, default=200_000)
    ap.add_argument("--fasta-mb", type=int, default=16)
    ap.add_argument("--copies", type=int, default=26, help="sample copies of the 1000G VCF (26 x 379 = 9,854)")
    ap.add_argument("--windows", type=int, default=32, help="Basenji records (131,072 bp each)")
    ap.add_argument("--only", choices=["bgzf", "vcf", "fastq", "tfrecord"], action="append")
    args = ap.parse_args()
    out = out_dir(args.out)
    only = set(args.only or ["bgzf", "vcf", "fastq", "tfrecord"])
    cases = []
    if "bgzf" in only or "fastq" in only:
        plain, gz = make_reads(args.shared, out, args.reads)
    if "bgzf" in only:
        fasta = make_fasta(args.shared, out, args.fasta_mb)
        for what, src in ((f"{args.reads:,} reads FASTQ", plain), (f"chr20 {args.fasta_mb} Mb FASTA", fasta)):
            mb = src.stat().st_size / 1e6
            cases.append((f"BGZF write {mb:.0f} MB", what, [
                ("genointerp.io.bgzf", "bgzf_genointerp", [str(src), str(out / "w_genointerp.gz")]),
                ("pysam BGZFile (htslib)", "bgzf_pysam", [str(src), str(out / "w_pysam.gz")]),
                ("Bio.bgzf", "bgzf_biopython", [str(src), str(out / "w_bio.gz")])]))
    if "vcf" in only:
        small = args.shared / "genotypes/1000G_EUR.chr21-22.vcf.gz"
        tiled = make_tiled_vcf(args.shared, out, args.copies)
        for what, path in (("1000G 379 x 2,000", small), (f"1000G tiled {379 * args.copies:,} x 2,000", tiled)):
            cases.append(("VCF GT -> dosages", what, [
                ("genointerp.io.vcf", "vcf_genointerp", [str(path)]),
                ("cyvcf2 genotype.array", "vcf_cyvcf2", [str(path)]),
                ("cyvcf2 gt_types", "vcf_cyvcf2_gt_types", [str(path)])]))
    if "fastq" in only:
        for what, path in ((f"{args.reads:,} x 150 bp, plain", plain), (f"{args.reads:,} x 150 bp, gzip", gz)):
            cases.append(("FASTQ records", what, [
                ("genointerp (_fastq.c)", "fastq_genointerp", [str(path)]),
                ("dnaio", "fastq_dnaio", [str(path)]),
                ("pysam FastxFile", "fastq_pysam", [str(path)])]))
    if "tfrecord" in only:
        zfolder, pfolder = make_basenji(args.shared, out, args.windows)
        what = f"{args.windows} Basenji records"
        cases.append(("TFRecord read", what + ", ZLIB", [
            ("genointerp.io.tfrecord", "tfr_genointerp", [str(zfolder)]),
            ("genointerp, no data CRC", "tfr_genointerp", [str(zfolder), "0"])]))
        cases.append(("TFRecord read", what + ", plain", [
            ("genointerp.io.tfrecord", "tfr_genointerp", [str(pfolder)]),
            ("genointerp, no data CRC", "tfr_genointerp", [str(pfolder), "0"]),
            ("tfrecord (no CRC check)", "tfr_tfrecord", [str(pfolder)])]))
    print(f"one thread, best (and median) of {args.repeats} runs in fresh processes, interleaved; "
          "peak MB: resident set above its size at the start of the work (median)\n", flush=True)
    rows = measure(cases, args.repeats)
    print("\nall cases\n" + table(rows, list(rows[0])))


if __name__ == "__main__":
    main()
