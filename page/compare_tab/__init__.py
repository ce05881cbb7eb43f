"""The Compare tab: two settings, two chains side by side.

`tab` lays out and wires the tab (lessons, the A/B table, the "Why is it fooled?" panel);
`pair` turns what a visitor sends into the two sides and holds the `compare_chains` tool.
"""

__all__ = ["pair", "tab"]
