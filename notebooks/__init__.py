"""The bundled notebooks, shipped as package data so that `logmine lab` finds them."""
