"""Relay's text format: printer (and parser)."""
