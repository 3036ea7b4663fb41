"""hympi tune's option values the command line shows before any tune runs; apart from the search and the
predictor (numpy, scikit-learn) so that building hympi's parser stays cheap."""

from __future__ import annotations

STRATEGIES = ("exhaustive", "random", "guided")
DEFAULT_EI_STOP = 0.005
FORMATS = ("mca", "mpich", "flags")
DEFAULT_PROFILE_TIMEOUT_S = 600.0
