"""render: verb reports as text and markdown, for both front ends."""
