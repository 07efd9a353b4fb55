"""The interaction table of a gene pair: how the case rate depends on the two genes jointly.

A gene enters the capsule network as several PCs, so "carries the risk pattern" has no column of
its own. The pair screen's model (pair_screen.py: least squares on both genes' PCs and every product
PC_a x PC_b) says which direction of each gene's PCs interacts with the other's: the leading
singular pair (u, v) of its product weights M (K_a, K_b), M ~ s u v^T. Each sample's position on
gene a's interacting axis is x_a . u, on gene b's x_b . v; split each at its median ("low" or
"high") and count cases in the four cells. Which end of an axis is "high" is a convention (its
largest loading positive): an exclusive-or shows as one diagonal of cells with a high case rate and
the other with a low one, co-occurrence as one cell apart from the three others, additive genes as
rates that change along both axes alike.
"""

from __future__ import annotations

import numpy as np

from genointerp.capsule.pair_screen import BLOCK_ALPHA, INTERACTION_ALPHA, SCORE_ALPHA, pair_design, ridge_fit

INTERACTION_COLUMNS = ("gene_a", "axis_a", "gene_b", "axis_b", "samples", "cases", "case_rate")


def interacting_axes(xa: np.ndarray, xb: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of every sample on each gene's interacting axis, float64 (n,) twice, from the
    standardised PCs xa (n, K_a), xb (n, K_b) and 0/1 labels y (n,). Each axis is oriented so that
    its largest loading is positive (a fixed sign: the same data give the same table)."""
    design, n_main = pair_design(xa, xb)
    products = ridge_fit(design, 2.0 * y - 1)[n_main:].reshape(xa.shape[1], xb.shape[1])
    u, _, vt = np.linalg.svd(products)
    axes = []
    for vector, x in ((u[:, 0], xa), (vt[0], xb)):
        vector = vector * np.sign(vector[np.argmax(np.abs(vector))])
        axes.append(x @ vector)
    return axes[0], axes[1]


def interaction_rows(xa: np.ndarray, xb: np.ndarray, y: np.ndarray) -> list[dict]:
    """The four cells (axis a low/high x axis b low/high, split at each axis's median; a sample at
    the median is low) with samples, cases and case rate, for xa (n, K_a), xb (n, K_b) standardised
    PCs and y (n,) 0/1 labels."""
    a, b = interacting_axes(xa, xb, y)
    high_a, high_b = a > np.median(a), b > np.median(b)
    rows = []
    for level_a in (False, True):
        for level_b in (False, True):
            cell = (high_a == level_a) & (high_b == level_b)
            n, cases = int(cell.sum()), int(y[cell].sum())
            rows.append({"axis_a": "high" if level_a else "low", "axis_b": "high" if level_b else "low",
                         "samples": n, "cases": cases, "case_rate": cases / n if n else float("nan")})
    return rows


def interaction_table(gene_a: str, gene_b: str, rows: list[dict]) -> str:
    """pair.tsv: one line per cell of interaction_rows."""
    lines = ["\t".join(INTERACTION_COLUMNS)]
    lines += [f"{gene_a}\t{r['axis_a']}\t{gene_b}\t{r['axis_b']}\t{r['samples']}\t{r['cases']}\t{r['case_rate']:.4f}"
              for r in rows]
    return "\n".join(lines) + "\n"


def describe(gene_a: str, gene_b: str, rows: list[dict], evidence: dict) -> str:
    """One line for the log: whether the pair interacts beyond chance (`evidence`:
    pair_screen.screened_pair's evidence), and the case rate on each diagonal of the table."""
    def rate(cells):
        n = sum(r["samples"] for r in cells)
        return sum(r["cases"] for r in cells) / n if n else float("nan")

    one = [r for r in rows if (r["axis_a"] == "high") != (r["axis_b"] == "high")]
    same = [r for r in rows if r not in one]
    table = (f"case rate {rate(one):.2f} where exactly one gene's interacting axis is high, {rate(same):.2f} where "
             f"both or neither are (pair.tsv)")
    family = evidence.get("test", "products")
    level = evidence.get("level", SCORE_ALPHA if family == "scores" else BLOCK_ALPHA)
    where = (f"where the best of {evidence['pairs']:,} pairs passes {evidence['chance_z']:.2f} by chance with "
             f"probability {level:g}")
    if family == "scores":
        test = (f"the score test of the product of the two genes' additive scores reaches |z| = {abs(evidence['z']):.2f} "
                f"against the refitted additive null model, {where}")
    elif family == "burdens":
        test = (f"the score test of the product of the two genes' carrier indicators (any low-frequency allele) "
                f"reaches |z| = {abs(evidence['z']):.2f} against the additive null model refitted along every gene's "
                f"score and carrier indicator, {where}")
    else:
        test = (f"the score test of its PCs' products reaches z = {evidence['z']:.2f} against the additive null "
                f"model, {where}")
    test += f" ({INTERACTION_ALPHA:g} for the families of the test together)"
    if evidence["interacting"]:
        return f"interacting pair {gene_a} x {gene_b}: {test}; {table}"
    return (f"no interacting pair: the screen's best, {gene_a} x {gene_b}, is within chance ({test}); {table}")
