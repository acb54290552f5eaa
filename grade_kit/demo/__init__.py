"""The embedded default: fixture packs and the local demo setups (DESIGN.md §6)."""
