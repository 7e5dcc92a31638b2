"""The privacy core: units and accounting, neighbour relations, noise and secure samplers, conversions.

The lowest layer of prdp_core: it imports no other layer (docs/architecture.md, *Layers*).
"""
