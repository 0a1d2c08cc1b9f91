"""Reporters: each exposes render(report) -> str."""
