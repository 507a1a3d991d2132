"""Shared infrastructure: a leaf package every other package may import, importing none
of them (docs/architecture in the README's tree)."""
