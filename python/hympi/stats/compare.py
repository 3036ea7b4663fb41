"""Is layout A faster than layout B here? The ratio of median rates with a bootstrap confidence interval.

Method (also in docs/study.md, "How layouts are compared"): for two layouts with rate samples a and b (the ok,
non-warm-up runs), the point estimate is median(a) / median(b). Its confidence interval is a percentile bootstrap:
`RESAMPLES` times, draw len(a) rates from a and len(b) rates from b with replacement, independently, and take the
ratio of the two medians; the interval is the (1-c)/2 and (1+c)/2 quantiles of those ratios for confidence c.
(A quantity each run measures against itself, such as a checkpoint's cost within the run, needs no second sample:
`median_ci` bootstraps the median of one sample the same way.)
The random generator is numpy's PCG64 with a fixed seed (`BOOTSTRAP_SEED`), so the same runs always give the same
interval and the same report. Two layouts are *separated* when the interval excludes 1; otherwise they are
*indistinguishable here* and neither is ranked above the other: one is chosen by `TIE_BREAKS` instead
(lower memory per node, then fewer threads per rank, then fewer cores). A layout with fewer than `MIN_SAMPLES`
ok runs cannot be compared at all, and a pair is never called separated while a side has fewer than
`MIN_SEPARATE` runs: with 3 runs against 3 the bootstrap interval of a median is too narrow (equal layouts come
out "separated" about 10 % of the time at 95 %; a rank test cannot go below p = 0.1 there). Measured over 1500
seeded pairs of equal layouts with +-40 % uniform noise (tests/python/test_compare.py): about 7 % are separated
at 4 runs against 4, a little above the 5 % a 95 % interval promises, and 2-5 % from 5 runs on (4-4.5 % at 6,
under 4 % at 8).
Where the runs were made in rounds (a sweep runs every layout once per round, in shuffled order), two layouts that
share at least `MIN_PAIRS` rounds are compared round by round instead (`paired_ratio_ci`): the estimate is the
trimmed geometric mean of each round's own ratio (the log ratios' mean without the highest and lowest `TRIM` of
them), the interval Yuen's trimmed t interval on the log ratios (Wilcox, "Introduction to Robust Estimation and
Hypothesis Testing"). The machine's drift from minute to minute (a VM's host moving its vCPUs, a neighbour's job)
touches both runs of a round alike and drops out of their ratio, where the two samples keep it as spread: under a
+-30 % drift between rounds a 1.15x lead with +-10 % noise is separated at 8 rounds in 89 of 100 seeded trials
round by round and in 13 from the two samples (tests/python/test_compare.py). Trimmed, because with a plain t
interval one wild round (a stale cache, a neighbour's burst) pulls the estimate and blows up the interval, where
the medians above shrug it off. The interval holds its level: equal things came out separated in 4-5 % of 1500
seeded trials at 4, 8 and 20 pairs with the noise above (the median's bootstrap over pairs, which hympi's benches
used before, gave 13 % at 4 and 7 % at 8). From 8 rounds on, because below that the trimmed interval has few
degrees of freedom and separates less often than the two samples on a quiet machine. Rates from different sweeps
never pair (a round is named by its sweep); a round a layout ran twice is left out.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy.special import stdtrit

from hympi.params import DEFAULT_CONFIDENCE, MIN_SEPARATE

RESAMPLES = 2000
BOOTSTRAP_SEED = 20231113
MIN_SAMPLES = 2
# Why two layouts are not separated when they have runs enough: the words the explanations use.
CI_CONTAINS_ONE = "the confidence interval of their ratio contains 1"
# Why a pair with fewer than MIN_SEPARATE runs a side gets no verdict, in the same words wherever hympi says so (the
# study's comparisons, the report's blade row, the recommendation's unconfirmed leads).
VERDICT_NEEDS = f"a verdict needs {MIN_SEPARATE} runs a side"
# Memory per node differing by less than this fraction is not a reason to prefer a layout.
MEMORY_MARGIN = 0.05


def too_few_runs(fewest: int) -> str:
    """'2 runs a side are too few to separate them (a verdict needs 4 runs a side)'."""
    return f"{fewest} runs a side are too few to separate them ({VERDICT_NEEDS})"


def cannot_separate(first: str, second: str, fewest: int, interval: str) -> str:
    """'2x1 and 1x2 cannot be separated with 3 runs a side (CI 1.02-1.40; a verdict needs 4 runs a side)'."""
    return f"{first} and {second} cannot be separated with {fewest} runs a side ({interval}; {VERDICT_NEEDS})"


@dataclass(frozen=True)
class Sample:
    """The rates of one layout, with what the tie-break needs: 'RxT' label, threads, cores, memory per node."""

    label: str
    rates: tuple[float, ...]
    threads: int
    cores: int
    memory_per_node_mib: float | None = None
    # The (sweep, round) each rate was measured in, where the runs were made in rounds; () where they were not.
    rounds: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        if self.rounds and len(self.rounds) != len(self.rates):
            raise ValueError(f"{self.label}: {len(self.rounds)} rounds for {len(self.rates)} rates")

    @property
    def median(self) -> float:
        """Median rate; raises ValueError for no rates."""
        if not self.rates:
            raise ValueError(f"{self.label} has no rates")
        return float(np.median(self.rates))


@dataclass(frozen=True)
class Comparison:
    """better vs worse: ratio of median rates (better / worse) and its confidence interval [low, high], or, compared
    round by round over `rounds` shared rounds (0: two samples), the trimmed geometric mean of the rounds' ratios.

    When `separated` is False the interval contains 1, `better` is only the tie-break's choice and `reason` says
    which criterion chose it ('lower memory per node', 'fewer threads per rank', 'fewer cores' or 'either').
    """

    better: str
    worse: str
    ratio: float
    low: float
    high: float
    separated: bool
    confidence: float = DEFAULT_CONFIDENCE
    reason: str = ""
    fewest: int = MIN_SEPARATE
    rounds: int = 0

    def turned(self) -> Comparison:
        """The same verdict with the two layouts named the other way round: ratio and interval inverted."""
        return replace(self, better=self.worse, worse=self.better, ratio=1.0 / self.ratio, low=1.0 / self.high,
                       high=1.0 / self.low)

    def seen_from(self, label: str) -> Comparison:
        """The same verdict with `label` named first: ratio and interval are then `label` / the other, whichever was
        faster (for a table that states every layout against one baseline)."""
        if label not in (self.better, self.worse):
            raise ValueError(f"{label!r} is neither side of {self.better} vs {self.worse}")
        return self if self.better == label else self.turned()

    def ci_text(self, level: bool = True) -> str:
        """'95 % CI 1.22-1.40' ('CI 1.22-1.40' without the level), followed by ', round by round' for a comparison
        over shared rounds."""
        interval = f"CI {self.low:.2f}-{self.high:.2f}" + (", round by round" if self.rounds else "")
        return f"{round(self.confidence * 100):g} % {interval}" if level else interval

    def sentence(self, choose: bool = True) -> str:
        """'2x1 is 1.31x 1x2 (95 % CI 1.22-1.40)' or '2x1 and 1x2 are indistinguishable here (CI ...); choose ...'
        (choose=False leaves the tie-break's choice out, for a pair whose choice the recommendation does not make)."""
        if self.separated:
            return f"{self.better} is {self.ratio:.2f}x {self.worse} ({self.ci_text()})"
        pick = f"; choose {self.better} {self.reason_text()}" if choose else ""
        if self.fewest < MIN_SEPARATE:
            return cannot_separate(self.better, self.worse, self.fewest, self.ci_text(level=False)) + pick
        return f"{self.better} and {self.worse} are indistinguishable here ({self.ci_text(level=False)}){pick}"

    def noise_text(self) -> str:
        """Why a pair is not separated, in words that follow 'within run-to-run noise of each other': too few runs
        to judge, or an interval that contains 1."""
        if self.fewest < MIN_SEPARATE:
            return too_few_runs(self.fewest)
        return CI_CONTAINS_ONE

    def reason_text(self) -> str:
        """'for its lower memory per node' (or 'either will do' when no criterion decides)."""
        return "(either will do)" if self.reason == "either" else f"for its {self.reason}"


@dataclass(frozen=True)
class Refusal:
    """A pair that cannot be compared: the layout(s) with fewer than MIN_SAMPLES ok runs."""

    first: str
    second: str
    why: str

    def sentence(self) -> str:
        """'1x2 and 2x1 cannot be compared: 1x2 has 1 ok run (need 2)'."""
        return f"{self.first} and {self.second} cannot be compared: {self.why}"


def _check_confidence(confidence: float) -> None:
    """ValueError unless 0 < confidence < 1."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")


def _resampled_medians(x: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """The medians of `resamples` draws of len(x) values from x with replacement."""
    return np.asarray(np.median(rng.choice(x, size=(resamples, x.size), replace=True), axis=1))


def _interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    """The percentile interval of the bootstrap's values at `confidence`."""
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return float(low), float(high)


def _positive_rates(a: Sequence[float], b: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """a and b as arrays; ValueError unless every rate is finite and > 0."""
    xa = np.asarray(a, dtype=float)
    xb = np.asarray(b, dtype=float)
    if not (np.all(np.isfinite(xa)) and np.all(np.isfinite(xb))) or np.any(xa <= 0) or np.any(xb <= 0):
        raise ValueError("rates must be finite and > 0")
    return xa, xb


def ratio_ci(a: Sequence[float], b: Sequence[float], confidence: float = DEFAULT_CONFIDENCE,
             resamples: int = RESAMPLES) -> tuple[float, float, float]:
    """(median(a)/median(b), low, high) by percentile bootstrap; ValueError for < MIN_SAMPLES values or rates <= 0."""
    if len(a) < MIN_SAMPLES or len(b) < MIN_SAMPLES:
        raise ValueError(f"need at least {MIN_SAMPLES} rates on each side, got {len(a)} and {len(b)}")
    _check_confidence(confidence)
    xa, xb = _positive_rates(a, b)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    ratios = _resampled_medians(xa, rng, resamples) / _resampled_medians(xb, rng, resamples)
    return (float(np.median(xa) / np.median(xb)), *_interval(ratios, confidence))


def slowdown_ci(without: Sequence[float], with_: Sequence[float], confidence: float = DEFAULT_CONFIDENCE
                ) -> tuple[float, float, float]:
    """(slowdown, low, high) of runs with something (checkpoints) against runs without, from their times: 1 - time
    without / time with, medians, the interval ratio_ci's; ValueError as ratio_ci (times where it says rates)."""
    ratio, low, high = ratio_ci([1 / t for t in without], [1 / t for t in with_], confidence)  # time with / without
    return 1 - 1 / ratio, 1 - 1 / low, 1 - 1 / high


def median_ci(values: Sequence[float], confidence: float = DEFAULT_CONFIDENCE,
              resamples: int = RESAMPLES) -> tuple[float, float, float]:
    """(median, low, high) of one sample by the same percentile bootstrap, for a quantity each run measures against
    itself (a within-run difference), where two samples' ratio would bring back the runs' spread; ValueError for
    < MIN_SAMPLES values or a value that is not finite."""
    if len(values) < MIN_SAMPLES:
        raise ValueError(f"need at least {MIN_SAMPLES} values, got {len(values)}")
    _check_confidence(confidence)
    x = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(x)):
        raise ValueError("values must be finite")
    medians = _resampled_medians(x, np.random.default_rng(BOOTSTRAP_SEED), resamples)
    return (float(np.median(x)), *_interval(medians, confidence))


# Rounds a comparison round by round needs, and the share of the log ratios trimmed from each end (the module's text).
MIN_PAIRS = 8
TRIM = 0.2


def paired_ratio_ci(a: Sequence[float], b: Sequence[float], confidence: float = DEFAULT_CONFIDENCE
                    ) -> tuple[float, float, float]:
    """(trimmed geometric mean of a[i] / b[i], low, high) by Yuen's trimmed t interval on the log ratios: for two
    things run in pairs (rounds) seconds or minutes apart, where the machine's drift touches both of a pair alike
    and drops out of its ratio, as it would not from ratio_ci's two samples; ValueError for unequal lengths,
    < MIN_SAMPLES pairs or rates <= 0."""
    if len(a) != len(b):
        raise ValueError(f"pairs need as many rates on each side, got {len(a)} and {len(b)}")
    if len(a) < MIN_SAMPLES:
        raise ValueError(f"need at least {MIN_SAMPLES} pairs, got {len(a)}")
    _check_confidence(confidence)
    xa, xb = _positive_rates(a, b)
    logs = np.sort(np.log(xa / xb))
    n = logs.size
    cut = math.floor(TRIM * n)
    kept = n - 2 * cut  # >= 2 from MIN_SAMPLES pairs on, as TRIM < 0.25
    mean = float(np.mean(logs[cut:n - cut]))
    winsorized = np.clip(logs, logs[cut], logs[n - cut - 1])
    error = math.sqrt((n - 1) * float(np.var(winsorized, ddof=1)) / (kept * (kept - 1)))
    half = float(stdtrit(kept - 1, (1.0 + confidence) / 2.0)) * error
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def paired_ratio_text(a: Sequence[float | None], b: Sequence[float | None],
                      confidence: float = DEFAULT_CONFIDENCE) -> str:
    """'0.98x (95 % CI 0.93-1.04, 20 pairs)', led by 'indistinguishable, ' where the interval holds 1, or followed by
    'too few pairs for a verdict (8 needed)' below MIN_PAIRS: paired_ratio_ci of a[i] / b[i] over the pairs where
    both have a rate (None: a failed or uncounted run), or why there is no ratio."""
    if len(a) != len(b):
        raise ValueError(f"pairs need as many runs on each side, got {len(a)} and {len(b)}")
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    if len(pairs) < MIN_SAMPLES:
        return f"too few pairs for a ratio ({len(pairs)} with both runs counted)"
    ratio, low, high = paired_ratio_ci([x for x, _ in pairs], [y for _, y in pairs], confidence)
    figure = f"{ratio:.2f}x ({round(confidence * 100):g} % CI {low:.2f}-{high:.2f}, {len(pairs)} pairs)"
    if len(pairs) < MIN_PAIRS:
        return f"{figure}, too few pairs for a verdict ({MIN_PAIRS} needed)"
    return f"indistinguishable, {figure}" if low <= 1.0 <= high else figure


def _memory_differs(a: Sample, b: Sample) -> bool:
    """True when both memories are known and differ by more than MEMORY_MARGIN of the larger."""
    if a.memory_per_node_mib is None or b.memory_per_node_mib is None:
        return False
    big = max(a.memory_per_node_mib, b.memory_per_node_mib)
    return big > 0 and abs(a.memory_per_node_mib - b.memory_per_node_mib) > MEMORY_MARGIN * big


def tie_break(a: Sample, b: Sample) -> tuple[Sample, Sample, str]:
    """(chosen, other, criterion) for two layouts the data cannot tell apart: memory, then threads, then cores."""
    if _memory_differs(a, b):
        assert a.memory_per_node_mib is not None and b.memory_per_node_mib is not None
        first, second = (a, b) if a.memory_per_node_mib < b.memory_per_node_mib else (b, a)
        return first, second, "lower memory per node"
    if a.threads != b.threads:
        first, second = (a, b) if a.threads < b.threads else (b, a)
        return first, second, "fewer threads per rank"
    if a.cores != b.cores:
        first, second = (a, b) if a.cores < b.cores else (b, a)
        return first, second, "fewer cores"
    return a, b, "either"


def refusal(a: Sample, b: Sample) -> Refusal | None:
    """Why a and b cannot be compared (too few ok runs), or None when they can."""
    short = [s for s in (a, b) if len(s.rates) < MIN_SAMPLES]
    if not short:
        return None
    why = "; ".join(f"{s.label} has {len(s.rates)} ok run{'s' if len(s.rates) != 1 else ''}" for s in short)
    return Refusal(a.label, b.label, f"{why} (need {MIN_SAMPLES})")


def shared_rounds(a: Sample, b: Sample) -> tuple[list[float], list[float]]:
    """a's and b's rates in the rounds each ran once, in round order (two empty lists where either has no rounds)."""
    if not (a.rounds and b.rounds):
        return [], []
    once_a, once_b = (_run_once(s) for s in (a, b))
    both = sorted(once_a.keys() & once_b.keys())
    return [once_a[k] for k in both], [once_b[k] for k in both]


def _run_once(sample: Sample) -> dict[tuple[int, int], float]:
    """round -> rate of the rounds `sample` ran once (a Counter: thousands of rounds are counted in one pass)."""
    count = Counter(sample.rounds)
    return {k: r for k, r in zip(sample.rounds, sample.rates, strict=True) if count[k] == 1}


def compare(a: Sample, b: Sample, confidence: float = DEFAULT_CONFIDENCE) -> Comparison | Refusal:
    """The verdict on a vs b: separated (better = higher median, or higher round by round where they share
    MIN_PAIRS rounds) or indistinguishable (better = tie-break)."""
    refused = refusal(a, b)
    if refused is not None:
        return refused
    if b.label < a.label:  # one resampling per pair, whichever order it is asked in
        a, b = b, a
    in_a, in_b = shared_rounds(a, b)
    if len(in_a) >= MIN_PAIRS:
        ratio, low, high = paired_ratio_ci(in_a, in_b, confidence)
        fewest = rounds = len(in_a)
    else:
        ratio, low, high = ratio_ci(a.rates, b.rates, confidence)
        fewest, rounds = min(len(a.rates), len(b.rates)), 0
    if (low > 1.0 or high < 1.0) and fewest >= MIN_SEPARATE:
        separated = Comparison(a.label, b.label, ratio, low, high, True, confidence, "", fewest, rounds)
        return separated if ratio >= 1.0 else separated.turned()
    chosen, _, reason = tie_break(a, b)
    tied = Comparison(a.label, b.label, ratio, low, high, False, confidence, reason, fewest, rounds)
    return tied if chosen is a else tied.turned()


def contenders(samples: Sequence[Sample], confidence: float = DEFAULT_CONFIDENCE) -> tuple[Sample, ...]:
    """The layout with the highest median plus every layout not separated from it (comparable ones only).

    A single contender means the best is separated from the runner-up; layouts with too few runs are included,
    since they cannot be ruled out.
    """
    usable = [s for s in samples if len(s.rates) >= MIN_SAMPLES]
    unusable = [s for s in samples if len(s.rates) < MIN_SAMPLES]
    if not usable:
        return tuple(unusable)
    best = max(usable, key=lambda s: s.median)
    out = [best]
    for other in usable:
        if other is best:
            continue
        verdict = compare(best, other, confidence)
        # Round by round, a layout with a lower median can still come out ahead: it stays in.
        if isinstance(verdict, Comparison) and (not verdict.separated or verdict.better == other.label):
            out.append(other)
    return tuple(out + unusable)


def is_finite_positive(value: float) -> bool:
    """True for a finite number > 0 (a usable rate)."""
    return math.isfinite(value) and value > 0
