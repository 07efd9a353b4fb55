"""Options the panels share, declared once, and the checks of numbers given inside option values."""

from __future__ import annotations

import typer

from genointerp import options
from genointerp.options import SEED_MAX



def seed_option(help: str = "Random seed: same inputs and seed, same outputs."):
    """--seed (default 1; 0 to 2**32 - 1)."""
    return typer.Option(1, "--seed", min=0, max=SEED_MAX, help=help)


def number(text: str, kind: type, option: str, min_value=None, max_value=None, name: str = ""):
    """genointerp.options.number as a usage error (exit 2) of `option`."""
    try:
        return options.number(text, kind, min_value, max_value, name)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=option) from None


def fasta_option(required: bool = True, more: str = ""):
    """--fasta, the reference genome the track commands read; `more` is said after its format."""
    return typer.Option(... if required else None, "--fasta", help="Reference FASTA (plain or bgzip) with a .fai "
                        f"index (and .gzi){'; ' + more if more else ''}.")


def track_model_option():
    """-m/--model of the commands that run a track model (default: the built-in one)."""
    return typer.Option(None, "-m", "--model", help="Model directory from train-tracks (default: the built-in chr20 "
                        "TF ChIP-seq model).")


def device_option(auto: str = "a GPU when there is one"):
    """--device (default auto); `auto` says what auto picks."""
    return typer.Option("auto", "--device", help=f"auto ({auto}), cpu, cuda or cuda:N.")


def threads_option(help: str = "CPU threads for torch."):
    """-t/--threads (default 1); `help` says what the threads do where it is not torch's pool."""
    return typer.Option(1, "-t", "--threads", min=1, help=help)


def force_option(what: str = "existing outputs"):
    """--force: overwrite `what` (the command's outputs, named as its help names them)."""
    return typer.Option(False, "--force", help=f"Overwrite {what}.")
