"""Comments, docstrings and docs cite the papers hympi comes from by authors and title (README.md, "Sources"), never
by the internal numbers of source files a reader does not have ("seed 000 §5", "seed-004", "seeds/002..."): issue 31.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from conftest import REPO

THIS = Path(__file__).resolve().relative_to(REPO).as_posix()
# A seed file's number (seed 000, Seed-004, MatchesSeed003, seed paper 000, paper 002), the seed files' folder, or
# "seed" standing for a paper before a figure, table or section (seed Fig. 9, seed §2.3, the seed's Table 3).
SEED_CITATION = re.compile(
    r"seeds?[ _-]?(?:paper[ _-]?)?0\d\d(?!\d)"
    r"|\bpaper[ _-]?0\d\d(?!\d)"
    r"|\bseeds/|shared/seeds"
    r"|\bseed(?:'s)?(?: paper(?:'s)?)? (?:§|figs?\.|tables? \d|sections? \d)",
    re.IGNORECASE,
)


def tracked_files() -> list[str]:
    """The repository's tracked paths, relative to its root."""
    proc = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, timeout=60)
    return [name for name in proc.stdout.decode("utf-8", errors="surrogateescape").split("\0") if name]


def seed_citations() -> list[str]:
    """'path:line: text' for every line of a tracked text file (not this one) that cites a seed file."""
    found = []
    for name in tracked_files():
        path = REPO / name
        if name == THIS or path.is_symlink() or not path.is_file():
            continue  # links are read through their target; a path being moved may be gone from the work tree
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue  # binary
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
            if SEED_CITATION.search(line):
                found.append(f"{name}:{number}: {line.strip()}")
    return found


@pytest.mark.parametrize("text", [
    "page-placement summaries (seed 000 §5).", "the seed-004 scheme", "TEST(CommThreadModel, MatchesSeed003)",
    "see /work/shared/seeds/002_x.txt", "on the blade row (seed paper 000, Figs. 7-8)", "(BT/SP; seed Fig. 9)",
    "The three steps (seed §2.3)", "the seed's Table 3 columns", "the seed paper's Fig. 8", "Seed_001's problems",
])
def test_the_pattern_finds_seed_citations(text):
    assert SEED_CITATION.search(text)


@pytest.mark.parametrize("text", [
    "--seeds 1,2 --repeat 2", "fixed repeats, seed 0, no MPI parameters", "rnd = random.Random(seed)",
    "the run orders (seeds 1001, 1002) differ", "(`--layout-seed`, default 20100913)", "the seed fixes the order",
    "[--parts spmv3d,rb3d,csr,seed]", "Jin et al., Fig. 9", "seed 1 again drew 2- and 4-rank random starts",
])
def test_the_pattern_leaves_random_seeds_alone(text):
    assert not SEED_CITATION.search(text)


def test_no_file_cites_a_seed_file():
    found = seed_citations()
    assert not found, ("cite the paper by authors and short title (README.md, Sources), not its seed file:\n"
                       + "\n".join(found))
