"""Topology-aware placement: communication matrix x hwloc tree -> rank-to-core map and rankfiles. The placement
itself is place.placement; this package imports nothing, so that the launch layer gets place.tree and
place.rankfile without numpy."""
