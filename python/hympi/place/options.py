"""Placement option values the command line shows before anything is placed (apart from the numpy mapping)."""

from __future__ import annotations

FILLS = ("spread", "compact")
