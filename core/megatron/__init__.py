"""Megatron-LM style model parallelism: tensor-parallel layers (layers, mappings), a live
torchrun demo (demo), pipeline schedules (schedules) and the papers' calculators (calculators).

Importing this package imports no torch; the submodules that need it import it themselves.
"""
