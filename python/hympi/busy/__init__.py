"""Other work on the machine while hympi measures: samples of the kernel's CPU accounting (sample), the CPU time
outside a run's process tree on the PUs it occupies (accounting), a thread sampling during a run (sampler), and the
quiet check before a sweep or study (quiet)."""
