"""One module per verb (or family of verbs); each exposes ``<verb>_cmd``."""
